/**
 * The vocabulary of flow decisions (SPEC 8): what can happen to a row or a contact (the `Decision` union and
 * its `OUTCOMES`), the data a template sees, and the state a decision reads. Types only (and the outcome
 * list): stores, renderers and the run share them without importing any engine.
 */
import type { RenderedMessage } from '../../channels/types.js';
import type { FlowDefinition } from '../../../generated/flow.js';
import type { Message } from '../../../generated/message.js';
import type { IdentityType, Profile } from '../../../events/profiles/profile-index.js';
import type { EventTime } from '../../../events/compaction/event-times.js';
import type { SendCounts } from './frequency-caps.js';

export interface TemplateData {
  event: Record<string, unknown>;
  contact: Record<string, unknown>;
  flow: { id: string; name: string };
  variant: { label: string } | null;
  /** The contact's unsubscribe link for this flow's topic; null for a transactional flow (SPEC 8). */
  unsubscribe_url: string | null;
  /** In a flow's steps: how the last waitUntil ended (run/step-entries.ts). */
  wait?: { outcome: 'event' | 'timeout' | null };
}

/** What a trigger row says about itself, whatever is decided for it. */
export interface RowFacts {
  identity: string | null;
  identityType: string | null;
  eventId: string | null;
}

/** A row whose contact and event are known: its send key (email, event id) and the send id derived from it. */
export interface Keyed extends RowFacts {
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
 * The contact was erased with `suppress`: never messaged, transactional flows included, whatever else the
 * row says (no event id, a key decided before). Decided first so that no other outcome records the
 * address: its decision row names the contact by its e-mail hash only (send-store.ts).
 */
export interface Suppressed extends RowFacts {
  outcome: 'suppressed';
  email: string;
  variant: null;
  sendId: null;
  reason: string;
}

/**
 * The contact is not entered: the key was decided before, the event is history (sent as a backfill, or
 * older than the flow's maxEventAgeSeconds), the contact unsubscribed from the flow's topic (or from
 * all marketing), the segment filter or the re-entry rule says no, or the message would exceed a
 * frequency cap (frequency-caps.ts).
 */
export interface Skipped extends Keyed {
  outcome: 'duplicate' | 'backfill' | 'too_old' | 'unsubscribed' | 'excluded_by_segment' | 'reentry_blocked' | 'frequency_capped';
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
 * first (run/step-entries.ts); each message step is decided when it is reached.
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
export type Decision = NoIdentity | Failed | Suppressed | Skipped | Holdout | ToRender | ToDefer | EnteredSteps;
/** A decision after rendering (template-renderer.ts): what a run records and sends. */
export type RenderedDecision = NoIdentity | Failed | Suppressed | Skipped | Holdout | Sent | Deferred | EnteredSteps;
export type Outcome = Decision['outcome'];
/** Every outcome, as the decisions endpoint documents them (`satisfies` and the line below: each one, once). */
export const OUTCOMES = ['sent', 'deferred_quiet_hours', 'holdout', 'entered', 'no_identity', 'failed', 'duplicate', 'suppressed', 'backfill', 'too_old', 'unsubscribed', 'excluded_by_segment', 'reentry_blocked', 'frequency_capped'] as const satisfies readonly Outcome[];
/** Outcomes of the steps of an entry (run/step-entries.ts) beside those: the entry left the flow on an event. */
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
