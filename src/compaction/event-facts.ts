/** The columns the compactor derives from an accepted event (SPEC 5, 4.4, 4.5). */
import { normalizeEmail } from '../domain.js';

export interface EventFacts {
  eventType: 'track' | 'identify';
  /** Predefined name, `custom_<eventName>`, or `identify` — the name triggers filter on. */
  eventName: string;
  clientId: string;
  /** Normalised traits.email when the event carries one. */
  traitEmail: string | null;
  userId: string | null;
  /** Event time corrected for client clock skew, epoch ms. */
  eventTime: number;
  /** The event's own properties: for custom events properties.properties; for identify its traits. */
  properties: unknown;
  /** False only for custom events that declared requiresIdentity: false. */
  requiresIdentity: boolean;
}

type Body = Record<string, any>;

/** SPEC 4.4: receivedAt − (sentAt − timestamp); receivedAt when there is no timestamp. */
export function correctedEventTime(body: Body, receivedAt: number): number {
  if (typeof body.timestamp !== 'string') return receivedAt;
  const happened = Date.parse(body.timestamp);
  return Number.isFinite(happened) ? receivedAt - (Number(body.sentAt) - happened) : receivedAt;
}

export function eventFacts(body: Body, receivedAt: number): EventFacts {
  const traits: Body = body.traits ?? {};
  const traitEmail = typeof traits.email === 'string' ? normalizeEmail(traits.email) : null;
  const userId = typeof traits.userId === 'string' ? traits.userId : typeof body.userId === 'string' ? body.userId : null;
  const base = { clientId: String(body.clientId), traitEmail, userId, eventTime: correctedEventTime(body, receivedAt) };
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
