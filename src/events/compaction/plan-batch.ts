/**
 * Decides, for one org's entries of a batch of log records in log order, what each becomes: an event
 * row, a pending row (waiting for identity), a quarantine row, or nothing (a duplicate). Outcomes are values.
 */
import type { DedupeWindow } from './dedupe-window.js';
import { dedupeKey } from './dedupe-window.js';
import { type EventFacts, eventFacts, eventNameOf } from '../log/event-facts.js';
import { PLAN_VIOLATION } from '../plans/plan-store.js';
import { type IdentityMap, type Mapping, clientKey } from './identity-map.js';
import { decodeRecord } from '../log/record-codec.js';
import type { LogEntry, StoredRecord } from '../log/types.js';
import { YIELD_EVERY, yieldNow } from '../../db/yield-now.js';
import type { KeptOut, Tombstones } from './tombstones.js';
import { normalizeEmail } from '../../core/domain.js';

export interface EventRow {
  entry: LogEntry;
  seq: number;
  /** The entry's place in its record (events.log_index). */
  index: number;
  facts: EventFacts;
  /** Resolved identity; null only for requiresIdentity=false events. */
  email: string | null;
}

export interface QuarantineRow {
  id: string;
  org: string;
  environment: string;
  code: string;
  errors: string;
  receivedAt: number;
  raw: string;
}

/** An event that broke its tracking plan (plan-verdict.ts): stored (observe) or quarantined (enforce). */
export interface ViolationRow {
  environment: string;
  eventName: string;
  /** The event's messageId; for an enforced plan, its quarantine id. */
  messageId: string;
  mode: 'observe' | 'enforce';
  receivedAt: number;
  /** JSON array of '<pointer> <keyword> <message>'. */
  reasons: string;
}

/** An identify whose clientId has events pending: release those received within 7 days before it. */
export interface Release {
  org: string;
  environment: string;
  clientId: string;
  email: string;
  identifiedAt: number;
}

export interface BatchPlan {
  events: EventRow[];
  pending: EventRow[];
  quarantine: QuarantineRow[];
  violations: ViolationRow[];
  mappings: Mapping[];
  releases: Release[];
  duplicates: number;
  /** Events of erased or suppressed contacts left out (tombstones.ts), by why. */
  keptOut: Record<KeptOut, number>;
  /** The org's tombstones, for the pending events an identify releases (write-batch.ts). */
  tombstones: Tombstones;
  lastSeq: number;
}

export interface PlanState {
  dedupe: DedupeWindow;
  identities: IdentityMap;
  /** Count of pending events per clientKey. */
  pendingByClient: Map<string, number>;
  tombstones: Tombstones;
}

/** One log entry with the seq of the record that carried it and its place among the record's entries. */
export interface SeqEntry {
  seq: number;
  index: number;
  entry: LogEntry;
}

/** Decodes records into their entries, grouped by org, in log order. */
export async function entriesByOrg(records: StoredRecord[], owned: (org: string) => boolean = () => true): Promise<Map<string, SeqEntry[]>> {
  const byOrg = new Map<string, SeqEntry[]>();
  let decoded = 0;
  for (const record of records) {
    const decodedEntries = decodeRecord(record.payload);
    for (let index = 0; index < decodedEntries.length; index++) {
      const entry = decodedEntries[index]!;
      if (!owned(entry.org)) continue;
      const seqEntry = { seq: record.seq, index, entry };
      const entries = byOrg.get(entry.org);
      if (entries) entries.push(seqEntry);
      else byOrg.set(entry.org, [seqEntry]);
      if (++decoded % YIELD_EVERY === 0) await yieldNow();
    }
  }
  return byOrg;
}

/** One org's entries, in log order, planned against its state; `lastSeq` is the caller's to set. */
export async function planEntries(entries: readonly SeqEntry[], state: PlanState): Promise<BatchPlan> {
  const plan: BatchPlan = {
    events: [],
    pending: [],
    quarantine: [],
    violations: [],
    mappings: [],
    releases: [],
    duplicates: 0,
    keptOut: { erased: 0, suppressed: 0 },
    tombstones: state.tombstones,
    lastSeq: 0,
  };
  let planned = 0;
  for (const { seq, index, entry } of entries) {
    planEntry(entry, seq, index, state, plan);
    if (++planned % YIELD_EVERY === 0) await yieldNow();
  }
  return plan;
}

function planEntry(entry: LogEntry, seq: number, index: number, state: PlanState, plan: BatchPlan): void {
  switch (entry.kind) {
    case 'rejected': {
      const keptOut = state.tombstones.keptOut(rejectedEmail(entry.body, state.tombstones.size), seq);
      if (keptOut) {
        plan.keptOut[keptOut]++;
        return;
      }
      plan.quarantine.push({
        id: entry.messageId,
        org: entry.org,
        environment: entry.environment,
        code: entry.code ?? 'schema_violation',
        errors: entry.errors ?? '[]',
        receivedAt: entry.receivedAt,
        raw: entry.body,
      });
      if (entry.code === PLAN_VIOLATION) plan.violations.push(violationRow(entry, rejectedEventName(entry.body), 'enforce'));
      return;
    }
    case 'event':
      planEvent(entry, seq, index, state, plan);
      return;
  }
}

/** The reasons as counted: each '<pointer> <keyword> <message>' (the entry's errors are `{ path, message }`). */
function violationRow(entry: LogEntry, eventName: string, mode: ViolationRow['mode']): ViolationRow {
  const errors = JSON.parse(entry.errors ?? '[]') as Array<{ path: string; message: string }>;
  const reasons = JSON.stringify(errors.map((e) => `${e.path} ${e.message}`));
  return { environment: entry.environment, eventName, messageId: entry.messageId, mode, receivedAt: entry.receivedAt, reasons };
}

function rejectedEventName(body: string): string {
  try {
    return eventNameOf(JSON.parse(body) as Record<string, unknown>);
  } catch {
    return 'unknown';
  }
}

/** The e-mail a rejected event's body names in traits.email, when the org has tombstones to check it against. */
function rejectedEmail(body: string, tombstones: number): string | null {
  if (tombstones === 0) return null;
  try {
    const email = (JSON.parse(body) as { traits?: { email?: unknown } } | null)?.traits?.email;
    return typeof email === 'string' ? normalizeEmail(email) : null;
  } catch {
    return null;
  }
}

function planEvent(entry: LogEntry, seq: number, index: number, state: PlanState, plan: BatchPlan): void {
  if (state.dedupe.checkAndRecord(dedupeKey(entry.org, entry.environment, entry.messageId), entry.receivedAt)) {
    plan.duplicates++;
    return;
  }
  // Entries carry their facts (the collector derived them); only those written before they did are parsed.
  const facts = entry.facts ?? eventFacts(JSON.parse(entry.body), entry.receivedAt);
  const { org, environment } = entry;
  const email = facts.traitEmail ?? state.identities.emailAt(org, environment, facts.clientId, entry.receivedAt) ?? null;
  // An erased or suppressed contact's event is left out whole: no row, and (an identify) no mapping.
  const keptOut = state.tombstones.keptOut(email, seq);
  if (keptOut) {
    plan.keptOut[keptOut]++;
    return;
  }
  // An identify maps its clientId to its e-mail; an alias maps its previousId to the e-mail its clientId has.
  const mapped = facts.eventType === 'identify' ? facts.clientId : facts.eventType === 'alias' ? facts.previousId : null;
  if (mapped !== null && email !== null) {
    const mapping = { org, environment, clientId: mapped, email, receivedAt: entry.receivedAt };
    if (state.identities.record(mapping)) plan.mappings.push(mapping);
    if ((state.pendingByClient.get(clientKey(org, environment, mapped)) ?? 0) > 0) {
      plan.releases.push({ org, environment, clientId: mapped, email, identifiedAt: entry.receivedAt });
    }
  }
  if (entry.code === PLAN_VIOLATION) plan.violations.push(violationRow(entry, facts.eventName, 'observe'));
  const row: EventRow = { entry, seq, index, facts, email };
  if (email !== null || !facts.requiresIdentity) {
    plan.events.push(row);
    return;
  }
  plan.pending.push(row);
  const key = clientKey(org, environment, facts.clientId);
  state.pendingByClient.set(key, (state.pendingByClient.get(key) ?? 0) + 1);
}
