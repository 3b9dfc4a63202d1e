/**
 * What happens to each trigger row of a run (SPEC 8): identity → send key already used → segment
 * filter → re-entry rule → experiment variant → branch → the message to render and its data. Pure apart
 * from the state it is given, so every rule is testable without a database; the runner renders the
 * chosen messages off the HTTP thread (template-renderer.ts) and persists what it returns.
 */
import type { RenderedMessage } from '../channels/types.js';
import { isEmailAddress, normalizeEmail } from '../../core/domain.js';
import type { FlowDefinition, Message, Variant } from '../../generated/flow.js';
import type { IdentityType, Profile } from '../../events/profiles/profile-index.js';
import { matches } from './condition.js';
import type { TemplateData } from './render.js';
import { sendIdFor } from './send-id.js';
import { pickVariant } from './variant.js';

export const OUTCOMES = ['sent', 'holdout', 'excluded_by_segment', 'reentry_blocked', 'no_identity', 'duplicate', 'failed'] as const;
export type Outcome = (typeof OUTCOMES)[number];

export interface Decision {
  outcome: Outcome;
  email: string | null;
  identity: string | null;
  identityType: string | null;
  eventId: string | null;
  variant: string | null;
  sendId: string | null;
  reason: string | null;
  /** Present for `sent` once rendered: what the channel delivers. */
  message?: RenderedMessage;
  /** Present for `sent` as decided, before rendering: the chosen message and its template data. */
  template?: MessageToRender;
}

export interface MessageToRender {
  message: Message;
  data: TemplateData;
}

export interface RunState {
  org: string;
  flow: FlowDefinition;
  now: number;
  /** Emails of the flow's segment, when it has a segment filter. */
  segment?: ReadonlySet<string>;
  /** Send keys (`email \0 eventId`) this flow already has; grows as the run decides. */
  keys: Set<string>;
  /** Per contact, when the flow last entered them (sent or holdout); grows as the run decides. */
  lastEntry: Map<string, number>;
  profile(type: IdentityType, value: string): Profile | undefined;
}

export function sendKey(email: string, eventId: string): string {
  return `${email}\u0000${eventId}`;
}

export function decide(row: Record<string, unknown>, state: RunState): Decision {
  const identity = row.identity == null ? null : String(row.identity);
  const identityType = row.identity_type == null ? null : String(row.identity_type);
  const eventId = row.event_id == null ? null : String(row.event_id);
  const base = { identity, identityType, eventId, email: null, variant: null, sendId: null, reason: null };

  const email = resolveEmail(identity, identityType, state);
  if (!email) return { ...base, outcome: 'no_identity', reason: identity ? `identity ${identityType ?? '(no type)'} not resolved to a contact` : 'the row has no identity' };
  if (!eventId) return { ...base, email, outcome: 'failed', reason: 'the row has no event_id' };
  const sendId = sendIdFor(state.org, state.flow.id, email, eventId);
  const known = { ...base, email, sendId };
  const key = sendKey(email, eventId);
  if (state.keys.has(key)) return { ...known, outcome: 'duplicate', reason: 'this (flow, contact, event) was already decided' };

  const filter = state.flow.segmentFilter;
  if (filter && state.segment) {
    const inSegment = state.segment.has(email);
    if ((filter.mode ?? 'exclude') === 'exclude' ? inSegment : !inSegment) {
      return { ...known, outcome: 'excluded_by_segment', reason: `${filter.mode ?? 'exclude'} segment ${filter.segment}` };
    }
  }

  const blocked = reentryBlock(email, state);
  if (blocked) return { ...known, outcome: 'reentry_blocked', reason: blocked };

  state.keys.add(key);
  const variant = state.flow.experiment ? pickVariant(state.flow.id, email, state.flow.experiment.variants) : undefined;
  const chosen = { ...known, variant: variant?.label ?? null };
  state.lastEntry.set(email, state.now);
  if (variant?.holdout) return { ...chosen, outcome: 'holdout' };

  const profile = state.profile('email', email) ?? { email_address: email };
  const data: TemplateData = {
    event: eventData(row),
    contact: { ...profile },
    flow: { id: state.flow.id, name: state.flow.name },
    variant: variant ? { label: variant.label } : null,
  };
  return { ...chosen, outcome: 'sent', template: { message: messageFor(state.flow, variant, data), data } };
}

/** The contact a row is about: its e-mail, or the e-mail of the profile with that user_id / e-mail hash. */
export function resolveEmail(identity: string | null, identityType: string | null, state: Pick<RunState, 'profile'>): string | null {
  if (!identity) return null;
  switch (identityType) {
    case null:
    case 'email': {
      const email = normalizeEmail(identity);
      return isEmailAddress(email) ? email : null;
    }
    case 'user_id':
    case 'email-hash':
      return (state.profile(identityType, identity)?.email_address as string | undefined) ?? null;
    default:
      return null;
  }
}

function reentryBlock(email: string, state: RunState): string | null {
  const last = state.lastEntry.get(email);
  if (last === undefined) return null;
  const rule = state.flow.reentry ?? 'every_event';
  if (rule === 'every_event') return null;
  if (rule === 'once') return 'reentry once: the contact already entered this flow';
  const waitMs = rule.afterSeconds * 1000;
  return state.now - last < waitMs ? `reentry after ${rule.afterSeconds} s: last entry ${Math.round((state.now - last) / 1000)} s ago` : null;
}

/** Variant message, else the first matching branch, else the flow message (SPEC 8). */
export function messageFor(flow: FlowDefinition, variant: Variant | undefined, data: TemplateData): Message {
  if (variant?.message) return variant.message;
  return flow.branches?.find((b) => matches(b.when, data))?.message ?? flow.message;
}

/** The row's columns (ts as ISO text), `raw` the parsed event, `properties` the event's own properties. */
export function eventData(row: Record<string, unknown>): Record<string, unknown> {
  const event: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(row)) {
    if (name === 'event_raw') continue;
    event[name] = value instanceof Date ? value.toISOString() : typeof value === 'bigint' ? Number(value) : value;
  }
  const raw = parseJson(row.event_raw);
  event.raw = raw;
  const properties = (raw as { properties?: Record<string, unknown> } | null)?.properties;
  // A custom event carries its own properties one level down (SPEC 4.2).
  event.properties = (raw as { event?: string } | null)?.event === 'custom' ? properties?.properties : properties;
  return event;
}

function parseJson(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? null;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
