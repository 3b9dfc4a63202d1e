/**
 * What happens to each trigger row of a run (SPEC 8): identity → suppression → event id → send key already used → history
 * (backfill, too old) → consent → segment filter → re-entry rule → experiment variant → branch →
 * frequency caps → quiet hours (deferred, not dropped) → the message to render and its data. Pure apart from the state it is given, so every
 * rule is testable without a database; the decision pipeline (run/decision-pipeline.ts) renders the chosen
 * messages off the HTTP thread (render/template-renderer.ts) and records what it returns.
 */
import { isEmailAddress, normalizeEmail } from '../../../core/domain.js';
import type { FlowDefinition, MessageStep, Variant } from '../../../generated/flow.js';
import type { Message } from '../../../generated/message.js';
import { matches } from './condition.js';
import type { Decision, EntryData, Keyed, MessageToRender, RowFacts, RunState, Skipped, TemplateData } from './decision.js';
import { sendIdFor } from './send-id.js';
import { pickVariant } from './variant.js';
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
  if (state.suppressed.has(email)) return { ...facts, outcome: 'suppressed', email, variant: null, sendId: null, reason: 'the contact was erased with suppress: never messaged, whatever the flow' };
  if (!eventId) return { ...facts, outcome: 'failed', email, variant: null, sendId: null, reason: 'the row has no event_id' };
  const keyed: Keyed = { ...facts, email, eventId, sendId: sendIdFor(state.org, state.flow.id, email, eventId) };
  const skip = (outcome: Skipped['outcome'], reason: string): Skipped => ({ ...keyed, outcome, variant: null, reason });
  const key = sendKey(email, eventId);
  if (state.keys.has(key)) return skip('duplicate', 'this (flow, contact, event) was already decided');

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
