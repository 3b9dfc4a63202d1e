/**
 * What happens to each trigger row of a run (SPEC 8): identity → send key already used → suppression → history
 * (backfill, too old) → consent → segment filter → re-entry rule → experiment variant → branch →
 * frequency caps → quiet hours (deferred, not dropped) → the message to render and its data. Pure apart from the state it is given, so every
 * rule is testable without a database; the runner renders the chosen messages off the HTTP thread
 * (template-renderer.ts) and persists what it returns.
 */
import type { RenderedMessage } from '../channels/types.js';
import { isEmailAddress, normalizeEmail } from '../../core/domain.js';
import type { FlowDefinition, Message, MessageStep, Variant } from '../../generated/flow.js';
import type { IdentityType, Profile } from '../../events/profiles/profile-index.js';
import type { EventTime } from '../../events/compaction/event-times.js';
import type { SendCounts } from './frequency-caps.js';
import { matches } from './condition.js';
import type { TemplateData } from './render.js';
import { sendIdFor } from './send-id.js';
import { pickVariant } from './variant.js';

/** What a trigger row says about itself, whatever is decided for it. */
interface RowFacts {
  identity: string | null;
  identityType: string | null;
  eventId: string | null;
}

/** A row whose contact and event are known: its send key (email, event id) and the send id derived from it. */
interface Keyed extends RowFacts {
  email: string;
  eventId: string;
  sendId: string;
}

/** The row names no contact (no identity, or one that resolves to no e-mail). */
export interface NoIdentity extends RowFacts {
  outcome: 'no_identity';
  email: null;
  variant: null;
  sendId: null;
  reason: string;
}

/** The row cannot be sent: it has no event id (no send id then), or its template did not render. */
export interface Failed extends RowFacts {
  outcome: 'failed';
  email: string;
  variant: string | null;
  sendId: string | null;
  reason: string;
}

/**
 * The contact is not entered: the key was decided before, the contact is suppressed (erased with
 * `suppress`: never messaged, transactional flows included), the event is history (sent as a backfill, or
 * older than the flow's maxEventAgeSeconds), the contact unsubscribed from the flow's topic (or from
 * all marketing), the segment filter or the re-entry rule says no, or the message would exceed a
 * frequency cap (frequency-caps.ts).
 */
export interface Skipped extends Keyed {
  outcome: 'duplicate' | 'suppressed' | 'backfill' | 'too_old' | 'unsubscribed' | 'excluded_by_segment' | 'reentry_blocked' | 'frequency_capped';
  variant: null;
  reason: string;
}

/** The contact entered the flow in the experiment's holdout: recorded, nothing sent. */
export interface Holdout extends Keyed {
  outcome: 'holdout';
  variant: string;
  reason: null;
}

/** The contact entered the flow and is sent `message`, or, as decided and not yet rendered, `template`. */
interface Entered extends Keyed {
  outcome: 'sent';
  variant: string | null;
  reason: null;
}
export interface ToRender extends Entered {
  template: MessageToRender;
}
export interface Sent extends Entered {
  message: RenderedMessage;
}

/**
 * The contact entered the flow inside quiet hours (quiet-hours.ts): the message waits in the outbox
 * until `dueAt`, the window's end, and is sent then if consent, suppression and caps still allow it.
 */
interface DeferredEntry extends Keyed {
  outcome: 'deferred_quiet_hours';
  variant: string | null;
  reason: string;
  dueAt: number;
}
export interface ToDefer extends DeferredEntry {
  template: MessageToRender;
}
export interface Deferred extends DeferredEntry {
  message: RenderedMessage;
}

/**
 * The contact entered a flow with steps: the entry is stored (wait-store.ts) and its steps run from the
 * first (flow-steps.ts); each message step is decided when it is reached.
 */
export interface EnteredSteps extends Keyed {
  outcome: 'entered';
  variant: string | null;
  reason: null;
  /** When the entry's event happened (epoch ms): a waitUntil or exit event counts from then. */
  eventAt: number;
  data: EntryData;
}

/** The template data an entry keeps for its later messages (the contact is read again when each is sent). */
export type EntryData = Pick<TemplateData, 'event' | 'flow' | 'variant'>;

/** What `decide` returns: a `sent` or deferred row carries the message still to render. */
export type Decision = NoIdentity | Failed | Skipped | Holdout | ToRender | ToDefer | EnteredSteps;
/** A decision after rendering (template-renderer.ts): what a run records and sends. */
export type RenderedDecision = NoIdentity | Failed | Skipped | Holdout | Sent | Deferred | EnteredSteps;
export type Outcome = Decision['outcome'];
/** Every outcome, as the decisions endpoint documents them (`satisfies` and the line below: each one, once). */
export const OUTCOMES = ['sent', 'deferred_quiet_hours', 'holdout', 'entered', 'no_identity', 'failed', 'duplicate', 'suppressed', 'backfill', 'too_old', 'unsubscribed', 'excluded_by_segment', 'reentry_blocked', 'frequency_capped'] as const satisfies readonly Outcome[];
/** Outcomes of the steps of an entry (flow-steps.ts) beside those: the entry left the flow on an event. */
export const STEP_OUTCOMES = ['exited'] as const;
const everyOutcomeListed: [Exclude<Outcome, (typeof OUTCOMES)[number]>] extends [never] ? true : never = true;
void everyOutcomeListed;

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
  /** When each stored event of the window happened, and whether it is a backfill (event-times.ts). */
  eventTimes: ReadonlyMap<string, EventTime>;
  /** The sends the frequency caps count, per contact; grows as the run decides. */
  sendCounts: SendCounts;
  /** Contacts erased with `suppress` (tombstones.ts): never messaged. */
  suppressed: ReadonlySet<string>;
  /** Per contact, the topics of this flow (its topic and `all`; none when transactional) the contact is unsubscribed from. */
  unsubscribed: ReadonlyMap<string, ReadonlyArray<{ topic: string; source: string }>>;
  /** When the quiet hours the contact is in now end, and in which zone; null outside quiet hours (or none set). */
  quietUntil(email: string): { at: number; zone: string } | null;
  /** The contact's unsubscribe link for the flow's topic; null for a transactional flow. */
  unsubscribeUrl(email: string): string | null;
  profile(type: IdentityType, value: string): Profile | undefined;
}

/** A flow without maxEventAgeSeconds never messages an event that happened more than a day before its run. */
export const DEFAULT_MAX_EVENT_AGE_SECONDS = 86_400;

export function sendKey(email: string, eventId: string): string {
  return `${email}\u0000${eventId}`;
}

export function decide(row: Record<string, unknown>, state: RunState): Decision {
  const facts: RowFacts = { identity: textOf(row.identity), identityType: textOf(row.identity_type), eventId: textOf(row.event_id) };
  const { identity, identityType, eventId } = facts;

  const email = resolveEmail(identity, identityType, state);
  if (!email) {
    const reason = identity ? `identity ${identityType ?? '(no type)'} not resolved to a contact` : 'the row has no identity';
    return { ...facts, outcome: 'no_identity', email: null, variant: null, sendId: null, reason };
  }
  if (!eventId) return { ...facts, outcome: 'failed', email, variant: null, sendId: null, reason: 'the row has no event_id' };
  const keyed: Keyed = { ...facts, email, eventId, sendId: sendIdFor(state.org, state.flow.id, email, eventId) };
  const skip = (outcome: Skipped['outcome'], reason: string): Skipped => ({ ...keyed, outcome, variant: null, reason });
  const key = sendKey(email, eventId);
  if (state.keys.has(key)) return skip('duplicate', 'this (flow, contact, event) was already decided');

  if (state.suppressed.has(email)) return skip('suppressed', 'the contact was erased with suppress: never messaged, whatever the flow');

  const time = state.eventTimes.get(eventId);
  if (time?.backfill) return skip('backfill', 'the event was sent with context.backfill: true (history, stored and in profiles, never messaged)');
  const maxAgeSeconds = state.flow.maxEventAgeSeconds ?? DEFAULT_MAX_EVENT_AGE_SECONDS;
  if (time && state.now - time.at > maxAgeSeconds * 1000) {
    return skip('too_old', `the event happened ${Math.round((state.now - time.at) / 1000)} s before this run, over maxEventAgeSeconds ${maxAgeSeconds}`);
  }

  const [unsubscribed] = state.unsubscribed.get(email) ?? [];
  if (unsubscribed) return skip('unsubscribed', `the contact is unsubscribed from topic ${unsubscribed.topic} (${unsubscribed.source})`);

  const filter = state.flow.segmentFilter;
  if (filter && state.segment) {
    const inSegment = state.segment.has(email);
    if ((filter.mode ?? 'exclude') === 'exclude' ? inSegment : !inSegment) return skip('excluded_by_segment', `${filter.mode ?? 'exclude'} segment ${filter.segment}`);
  }

  const blocked = reentryBlock(email, state);
  if (blocked) return skip('reentry_blocked', blocked);

  const variant = state.flow.experiment ? pickVariant(state.flow.id, email, state.flow.experiment.variants) : undefined;
  const enter = () => {
    state.keys.add(key);
    state.lastEntry.set(email, state.now);
  };
  if (variant?.holdout) {
    enter();
    return { ...keyed, outcome: 'holdout', variant: variant.label, reason: null };
  }
  if (state.flow.steps) {
    enter();
    const data: EntryData = { event: eventData(row), flow: { id: state.flow.id, name: state.flow.name }, variant: variant ? { label: variant.label } : null };
    return { ...keyed, outcome: 'entered', variant: variant?.label ?? null, reason: null, eventAt: time?.at ?? state.now, data };
  }
  const template = messageToRender(row, state.flow, email, variant, state.profile, state.unsubscribeUrl(email));
  const capped = state.sendCounts.capped(email, template.message.channel, state.now);
  if (capped) return skip('frequency_capped', capped);
  enter();
  state.sendCounts.add(email, template.message.channel, state.now);
  const quiet = state.quietUntil(email);
  if (quiet) {
    const reason = `quiet hours in ${quiet.zone} until ${new Date(quiet.at).toISOString()}: sent then, if consent, suppression and caps still allow`;
    return { ...keyed, outcome: 'deferred_quiet_hours', variant: variant?.label ?? null, reason, dueAt: quiet.at, template };
  }
  return { ...keyed, outcome: 'sent', variant: variant?.label ?? null, reason: null, template };
}

/**
 * The message a flow sends for a trigger row and the data its template reads: the evaluation a run
 * makes for each contact it enters (`decide`) and the message preview makes for the first row of its
 * window (message-preview.ts). `email` null: a preview of a row that names no contact.
 */
export function messageToRender(
  row: Record<string, unknown>,
  flow: Pick<FlowDefinition, 'id' | 'name' | 'message' | 'branches' | 'steps'>,
  email: string | null,
  variant: Pick<Variant, 'label' | 'message'> | undefined,
  profile: RunState['profile'],
  unsubscribeUrl: string | null,
): MessageToRender {
  const contact = (email === null ? undefined : profile('email', email)) ?? { email_address: email };
  const data: TemplateData = {
    event: eventData(row),
    contact: { ...contact },
    flow: { id: flow.id, name: flow.name },
    variant: variant ? { label: variant.label } : null,
    unsubscribe_url: unsubscribeUrl,
  };
  return { message: messageFor(flow, variant, data), data };
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

/**
 * Variant message, else the first matching branch, else the flow message (SPEC 8). A flow with steps
 * has none here (validate-flow.ts): its first message step stands in (a preview shows that one).
 */
export function messageFor(flow: Pick<FlowDefinition, 'message' | 'branches' | 'steps'>, variant: Pick<Variant, 'message'> | undefined, data: TemplateData): Message {
  if (variant?.message) return variant.message;
  const step: Pick<MessageStep, 'message' | 'branches'> | undefined = flow.message ? { message: flow.message, branches: flow.branches } : flow.steps?.find((s): s is MessageStep => 'message' in s);
  if (!step) throw new Error('a flow has a message or a message step (validate-flow.ts)');
  return step.branches?.find((b) => matches(b.when, data))?.message ?? step.message;
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

/** A row's value as text (null stays null). */
export function textOf(value: unknown): string | null {
  return value == null ? null : String(value);
}

function parseJson(value: unknown): unknown {
  if (typeof value !== 'string') return value ?? null;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}
