/**
 * The stored text of an event (LogEntry.body): made by the collector, or, for a batch stored as it
 * arrived, when its log record is read (record-codec.ts). One function for both, so the two agree.
 */
import { tooDeep } from '../../http/json-body.js';

export type Body = Record<string, unknown>;

/** A member of a batch as the event it stands for: the envelope's partnerId and context, then its own members. */
export function batchMemberEvent(envelope: object, member: Body): Body {
  const { partnerId, context } = envelope as Body;
  return { partnerId, ...(context ? { context } : {}), ...member };
}

/**
 * The event as stored: JSON text without partnerSecret or writeKey, with its messageId. Serialized once.
 * Bodies come through the depth-bounded parser (http/json-body.ts); should one ever not, a stack
 * overflow here still answers json_too_deep instead of a 500.
 */
export function storedBody(body: Body, messageId: string): string {
  const { partnerSecret: _secret, writeKey: _writeKey, ...rest } = body;
  return serialized({ ...rest, messageId });
}

/** JSON text of an event the service built itself (no secret in it), e.g. from a Segment message. */
export function serialized(event: Body): string {
  try {
    return JSON.stringify(event);
  } catch (error) {
    if (error instanceof RangeError) throw tooDeep();
    throw error;
  }
}

