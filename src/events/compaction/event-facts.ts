/** The columns the compactor derives from an accepted event (SPEC 5, 4.4, 4.5). */
import { normalizeEmail } from '../../core/domain.js';

export interface EventFacts {
  eventType: 'track' | 'identify' | 'alias';
  /** Predefined name, `custom_<eventName>`, `identify` or `alias` — the name triggers filter on. */
  eventName: string;
  clientId: string;
  /** Normalised traits.email when the event carries one. */
  traitEmail: string | null;
  userId: string | null;
  /** Event time corrected for client clock skew, epoch ms. */
  eventTime: number;
  /** sentAt − receivedAt when it exceeded MAX_CLOCK_SKEW_MS and was therefore not applied; else null. */
  clockSkewMs: number | null;
  /** The event's own properties: for custom events properties.properties; for identify its traits. */
  properties: unknown;
  /** False only for custom events that declared requiresIdentity: false. */
  requiresIdentity: boolean;
  /** An alias's earlier clientId, to be mapped to the e-mail of clientId. */
  previousId?: string;
}

type Body = Record<string, any>;

/**
 * |sentAt − receivedAt| beyond this is not a clock that runs off but a wrong value (seconds, a stale
 * constant, a dead clock battery): applying it moved events by years (sentAt in seconds with a
 * timestamp gave the year 2083). 24 h covers a device set to the wrong time zone (at most ±14 h).
 */
export const MAX_CLOCK_SKEW_MS = 24 * 60 * 60 * 1000;

/**
 * SPEC 4.4: receivedAt − (sentAt − timestamp); receivedAt when there is no timestamp. When the skew is
 * over MAX_CLOCK_SKEW_MS the event time is receivedAt (the timestamp is by the same clock, so it is not
 * trusted either) and the skew is returned so it is recorded (events.clock_skew_ms).
 */
export function correctedEventTime(body: Body, receivedAt: number): { eventTime: number; clockSkewMs: number | null } {
  const sentAt = Number(body.sentAt);
  const skew = sentAt - receivedAt;
  if (Math.abs(skew) > MAX_CLOCK_SKEW_MS) return { eventTime: receivedAt, clockSkewMs: Math.trunc(skew) };
  if (typeof body.timestamp !== 'string') return { eventTime: receivedAt, clockSkewMs: null };
  const happened = Date.parse(body.timestamp);
  return { eventTime: Number.isFinite(happened) ? receivedAt - (sentAt - happened) : receivedAt, clockSkewMs: null };
}

export function eventFacts(body: Body, receivedAt: number): EventFacts {
  const traits: Body = body.traits ?? {};
  const traitEmail = typeof traits.email === 'string' ? normalizeEmail(traits.email) : null;
  const userId = typeof traits.userId === 'string' ? traits.userId : typeof body.userId === 'string' ? body.userId : null;
  const base = { clientId: String(body.clientId), traitEmail, userId, ...correctedEventTime(body, receivedAt) };
  if (body.type === 'alias') {
    return { ...base, eventType: 'alias', eventName: 'alias', properties: {}, requiresIdentity: true, previousId: String(body.previousId) };
  }
  if (body.type === 'identify') {
    return { ...base, eventType: 'identify', eventName: 'identify', properties: traits, requiresIdentity: true };
  }
  const props: Body = body.properties ?? {};
  if (body.event === 'custom') {
    return {
      ...base,
      eventType: 'track',
      eventName: `custom_${props.eventName}`,
      properties: props.properties ?? {},
      requiresIdentity: props.requiresIdentity !== false,
    };
  }
  return { ...base, eventType: 'track', eventName: String(body.event), properties: props, requiresIdentity: true };
}
