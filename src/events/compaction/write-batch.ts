/**
 * Writes one planned batch in ONE DuckDB transaction together with the new log position, so a crash
 * anywhere before COMMIT replays the same records and a crash after it never repeats them.
 * visible_at is one value per commit, strictly increasing (the trigger cursor column, SPEC 5).
 */
import type { Sql } from '../../db/sql.js';
import { type Database, microsParam, tsParam } from '../../db/database.js';
import { eventFacts } from '../log/event-facts.js';
import { IDENTITY_TTL_MS, type Mapping, clientKey } from './identity-map.js';
import type { BatchPlan, EventRow, QuarantineRow, Release, ViolationRow } from './plan-batch.js';
import type { ContactTouch } from './compaction.js';
import type { KeptOut } from './tombstones.js';

export const CURSOR_NAME = 'compactor';

export interface WriteOutcome {
  events: number;
  quarantined: QuarantineRow[];
  /** clientKeys of pending rows that left the pending table (released or expired), one per row. */
  pendingResolved: string[];
  visibleAtMicros: bigint;
  touched: ContactTouch[];
  /** Events of erased or suppressed contacts left out, planned or released (tombstones.ts). */
  keptOut: Record<KeptOut, number>;
  /** previousIds linked by aliases released here (stored with the batch; the caller keeps them in memory). */
  aliasMappings: Mapping[];
}

/** How many aliases in a row one identify follows (anonymous → user id → new user id, and one more). */
const MAX_ALIAS_HOPS = 3;

/** The previousId of an alias event's stored body; undefined for any other event (most: no parse). */
function aliasedId(body: string): string | undefined {
  if (!body.includes('"previousId"')) return undefined;
  const event = JSON.parse(body) as { type?: unknown; previousId?: unknown };
  return event.type === 'alias' && typeof event.previousId === 'string' ? event.previousId : undefined;
}

interface PendingRow {
  org: string;
  environment: string;
  message_id: string;
  client_id: string;
  received_at_ms: bigint;
  body: string;
  log_seq: bigint;
  log_index: number | null;
}

const PENDING_COLUMNS = `org, environment, message_id, client_id, epoch_ms(received_at) AS received_at_ms, body, log_seq, log_index`;

/**
 * `sweepExpired`: also move pending rows past their 7 days to quarantine. The caller asks for it only
 * when pending rows exist and not on every commit: each DuckDB statement costs milliseconds.
 */
export async function writeBatch(
  db: Database,
  plan: BatchPlan,
  now: number,
  lastVisibleAtMicros: bigint,
  sweepExpired: boolean,
): Promise<WriteOutcome> {
  const nowMicros = BigInt(now) * 1000n;
  const visibleAtMicros = nowMicros > lastVisibleAtMicros ? nowMicros : lastVisibleAtMicros + 1n;
  return db.transaction(async (c) => {
    const pendingResolved: string[] = [];
    const keptOutReleased: Record<KeptOut, number> = { erased: 0, suppressed: 0 };
    const events: EventRow[] = [...plan.events];
    const quarantined: QuarantineRow[] = [...plan.quarantine];

    if (plan.pending.length > 0) {
      await c.appendRows({ table: 'pending_identity' }, plan.pending, (a, row) => {
        a.appendVarchar(row.entry.org);
        a.appendVarchar(row.entry.environment);
        a.appendVarchar(row.entry.messageId);
        a.appendVarchar(row.facts.clientId);
        a.appendTimestampTZ(tsParam(row.entry.receivedAt));
        a.appendTimestampTZ(tsParam(row.entry.receivedAt + IDENTITY_TTL_MS));
        a.appendVarchar(row.entry.body);
        a.appendBigInt(BigInt(row.seq));
        a.appendInteger(row.index);
      });
    }

    // An alias that waited for its clientId's identify links its previousId once released, which may
    // release that id's own waiting events in turn (a chain of aliases, a few hops at most).
    const aliasMappings: Mapping[] = [];
    let releases = plan.releases;
    for (let hop = 0; releases.length > 0 && hop <= MAX_ALIAS_HOPS; hop++) {
      const next: Release[] = [];
      for (const { row, email, identifiedAt } of await releasePending(c, releases)) {
        pendingResolved.push(clientKey(row.org, row.environment, row.client_id));
        // An erased contact's events from before its erasure stay out, released or not.
        const keptOut = plan.tombstones.keptOut(email, Number(row.log_seq));
        if (keptOut) {
          keptOutReleased[keptOut]++;
          continue;
        }
        events.push(pendingToEvent(row, email));
        const previousId = aliasedId(row.body);
        if (previousId !== undefined) {
          const link = { org: row.org, environment: row.environment, clientId: previousId, email, receivedAt: identifiedAt };
          aliasMappings.push(link);
          next.push({ org: row.org, environment: row.environment, clientId: previousId, email, identifiedAt });
        }
      }
      releases = next;
    }
    plan.mappings.push(...aliasMappings);

    const expired = sweepExpired
      ? await c.all<PendingRow>(`DELETE FROM pending_identity WHERE expires_at <= $1 RETURNING ${PENDING_COLUMNS}`, [tsParam(now)])
      : [];
    for (const p of expired) {
      pendingResolved.push(clientKey(p.org, p.environment, p.client_id));
      quarantined.push({
        id: p.message_id,
        org: p.org,
        environment: p.environment,
        code: 'identity_unresolved',
        errors: JSON.stringify([
          { path: '/clientId', message: 'no e-mail and no identify for this clientId within 7 days of the event' },
        ]),
        receivedAt: Number(p.received_at_ms),
        raw: p.body,
      });
    }

    if (events.length > 0) await appendEvents(c, events, visibleAtMicros);
    if (quarantined.length > 0) await appendQuarantine(c, quarantined, now);
    if (plan.violations.length > 0) await appendViolations(c, plan.violations);
    await upsertMappings(c, plan);

    // The row exists from the start (Compactor.loadState): an UPDATE costs a quarter of an INSERT OR REPLACE.
    await c.run('UPDATE log_cursor SET seq = $2, visible_at = $3 WHERE name = $1', [
      CURSOR_NAME,
      BigInt(plan.lastSeq),
      microsParam(visibleAtMicros),
    ]);
    const touched = events.filter((e) => e.email !== null && e.entry.environment === 'production').map(touchOf);
    const keptOut = { erased: plan.keptOut.erased + keptOutReleased.erased, suppressed: plan.keptOut.suppressed + keptOutReleased.suppressed };
    return { events: events.length, quarantined, pendingResolved, visibleAtMicros, touched, keptOut, aliasMappings };
  });
}

/**
 * Events whose names give a profile more than a first and last seen, as pipelines/profiles.sql's
 * event_activity and event_orders read them: traits (identify, registration), revenue and orders.
 */
const SHAPES_PROFILE = new Set(['identify', 'registration', 'complete_transaction']);

/** The touch of a production event with an e-mail: `seenAt` unless the event shapes more of the profile (a time zone too). */
function touchOf(e: EventRow): ContactTouch {
  const seenOnly = !SHAPES_PROFILE.has(e.facts.eventName) && !e.entry.body.includes('"timezone"');
  return { org: e.entry.org, email: e.email!, seenAt: seenOnly ? e.entry.receivedAt : undefined };
}

function pendingToEvent(p: PendingRow, email: string): EventRow {
  const receivedAt = Number(p.received_at_ms);
  return {
    entry: {
      kind: 'event',
      org: p.org,
      environment: p.environment as EventRow['entry']['environment'],
      messageId: p.message_id,
      receivedAt,
      body: p.body,
      code: null,
      errors: null,
      facts: null,
    },
    seq: Number(p.log_seq),
    index: p.log_index ?? 0,
    facts: eventFacts(JSON.parse(p.body), receivedAt),
    email,
  };
}


/** The events table's cells of each row, through the appender (bench/append-ceiling.ts measures this path alone). */
export function appendEvents(c: Sql, rows: EventRow[], visibleAtMicros: bigint): Promise<void> {
  return c.appendRows({ table: 'events' }, rows, (a, row) => {
    const { entry, facts } = row;
    a.appendVarchar(entry.org);
    a.appendVarchar(entry.environment);
    a.appendVarchar(entry.messageId);
    a.appendVarchar(facts.eventType);
    a.appendVarchar(facts.eventName);
    a.appendVarchar(facts.clientId);
    if (row.email === null) a.appendNull();
    else a.appendVarchar(row.email);
    if (facts.userId === null) a.appendNull();
    else a.appendVarchar(facts.userId);
    a.appendTimestampTZ(tsParam(entry.receivedAt));
    a.appendTimestampTZ(tsParam(facts.eventTime));
    a.appendTimestampTZ(microsParam(visibleAtMicros));
    a.appendVarchar(facts.properties);
    a.appendVarchar(entry.body);
    a.appendBigInt(BigInt(row.seq));
    if (facts.clockSkewMs === null) a.appendNull();
    else a.appendBigInt(BigInt(facts.clockSkewMs));
    a.appendInteger(row.index);
  });
}

function appendQuarantine(c: Sql, rows: QuarantineRow[], now: number): Promise<void> {
  return c.appendRows({ table: 'quarantine' }, rows, (a, row) => {
    a.appendVarchar(row.id);
    a.appendVarchar(row.org);
    a.appendVarchar(row.environment);
    a.appendVarchar(row.code);
    a.appendVarchar(row.errors);
    a.appendTimestampTZ(tsParam(row.receivedAt));
    a.appendTimestampTZ(tsParam(now));
    a.appendVarchar(row.raw);
  });
}

function appendViolations(c: Sql, rows: ViolationRow[]): Promise<void> {
  return c.appendRows({ table: 'plan_violations' }, rows, (a, row) => {
    a.appendVarchar(row.environment);
    a.appendVarchar(row.eventName);
    a.appendVarchar(row.messageId);
    a.appendVarchar(row.mode);
    a.appendTimestampTZ(tsParam(row.receivedAt));
    a.appendVarchar(row.reasons);
  });
}

/**
 * Rows per multi-row statement. One statement per identify cost ~2.7 ms (upsert) and ~1.6 ms (release)
 * each: 1,000 identifies took 2.7 s and 1.6 s, against 0.09 s in one statement each.
 */
const ROWS_PER_STATEMENT = 500;

/** `($1, $2, …), (…)` for `rows` rows of `columns` parameters each. */
function valuesPlaceholders(rows: number, columns: number): string {
  return Array.from({ length: rows }, (_, row) => {
    const first = row * columns + 1;
    return `(${Array.from({ length: columns }, (_, col) => `$${first + col}`).join(', ')})`;
  }).join(', ');
}

function* chunks<T>(items: readonly T[]): Generator<T[]> {
  for (let start = 0; start < items.length; start += ROWS_PER_STATEMENT) yield items.slice(start, start + ROWS_PER_STATEMENT);
}

async function upsertMappings(c: Sql, plan: BatchPlan): Promise<void> {
  // Only the latest identify per clientId in this batch matters (latest wins).
  const latest = [...new Map(plan.mappings.map((m) => [clientKey(m.org, m.environment, m.clientId), m])).values()];
  for (const chunk of chunks(latest)) {
    const params = chunk.flatMap((m) => [
      m.org,
      m.environment,
      m.clientId,
      m.email,
      tsParam(m.receivedAt),
      tsParam(m.receivedAt + IDENTITY_TTL_MS),
    ]);
    await c.run(`INSERT OR REPLACE INTO identify_mappings VALUES ${valuesPlaceholders(chunk.length, 6)}`, params);
  }
}

/**
 * Takes the pending rows each release frees out of pending_identity. Only the first identify of a
 * clientId in the batch releases anything: it frees every row received within 7 days before it, and
 * a later identify's window starts later still.
 */
async function releasePending(c: Sql, releases: Release[]): Promise<Array<{ row: PendingRow; email: string; identifiedAt: number }>> {
  const first = new Map<string, Release>();
  for (const r of releases) {
    const key = clientKey(r.org, r.environment, r.clientId);
    if (!first.has(key)) first.set(key, r);
  }
  const released: Array<{ row: PendingRow; email: string; identifiedAt: number }> = [];
  for (const chunk of chunks([...first.values()])) {
    const params = chunk.flatMap((r) => [r.org, r.environment, r.clientId, tsParam(r.identifiedAt - IDENTITY_TTL_MS)]);
    const rows = await c.all<PendingRow>(
      `DELETE FROM pending_identity p WHERE EXISTS (
         SELECT 1 FROM (VALUES ${valuesPlaceholders(chunk.length, 4)}) AS r(org, environment, client_id, since)
         WHERE r.org = p.org AND r.environment = p.environment AND r.client_id = p.client_id
           AND p.received_at >= r.since::TIMESTAMPTZ)
       RETURNING ${PENDING_COLUMNS}`,
      params,
    );
    for (const row of rows) {
      const release = first.get(clientKey(row.org, row.environment, row.client_id))!;
      released.push({ row, email: release.email, identifiedAt: release.identifiedAt });
    }
  }
  return released;
}
