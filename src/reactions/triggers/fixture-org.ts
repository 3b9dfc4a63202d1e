/**
 * An org's database made from fixture events, in memory, for `audiencectl trigger test` (issue 26, part 4):
 * the org's tables and views as the service makes them (storage/migrate.ts), and each event taken the
 * way a POST to /http/v1/collect and the compactor take it — the same schema check and log entry
 * (validate-event-step.ts), the same plan (dedupe, identity, pending until an identify) and the same
 * write (write-batch.ts) — so identities resolve as in production. No service, no files, no network.
 *
 * Each event is one commit "received" at its own sentAt, so `ts` (visible_at) is the event's sentAt (a
 * later commit's is at least 1 µs after the one before, as in the service) and a window given in times
 * means what it does on the live org. An event still waiting for its identify at the end is not in
 * event_triggers, as in production.
 */
import { LocalDatabase } from '../../db/database.js';
import { DedupeWindow } from '../../events/compaction/dedupe-window.js';
import { IdentityMap } from '../../events/compaction/identity-map.js';
import { type PlanState, planEntries } from '../../events/compaction/plan-batch.js';
import { loadTombstones } from '../../events/compaction/tombstones.js';
import { writeBatch } from '../../events/compaction/write-batch.js';
import { createValidateEventStep } from '../../events/collect/validate-event-step.js';
import { applyOrgSchema, writeOrgSettings } from '../../storage/migrate.js';

/** A fixture the service would not take as it is; `line` is 1-based. */
export class FixtureRefused extends Error {
  constructor(readonly line: number, reason: string) {
    super(`line ${line}: ${reason}`);
    this.name = 'FixtureRefused';
  }
}

export interface FixtureOrg {
  db: LocalDatabase;
  /** Events in event_triggers' table (pending ones released by an identify included). */
  stored: number;
  /** Events still waiting for an identify: not in event_triggers. */
  pending: number;
  /** Repeats of a messageId within 24 h, stored once. */
  duplicates: number;
  /** The newest visible_at, epoch µs (0 with no event). */
  lastVisibleAt: bigint;
}

/** Fixture lines hold events as a partner sends them; credentials may be left out (they authenticate nothing here). */
const FIXTURE_CREDENTIALS = { partnerId: 'fixture', partnerSecret: 'fixture' };

/** Makes `org`'s relations in a new in-memory database and commits the JSONL `fixture`'s events, in order. */
export async function fixtureOrg(org: string, fixture: string): Promise<FixtureOrg> {
  const events = parseLines(fixture);
  const db = await LocalDatabase.open(':memory:', { threads: 1, memoryLimit: '1GB' });
  try {
    // `<org>.event_triggers` names the org's catalog, as in its own file (the checker does the same).
    // An in-memory database's own catalog is `memory`, itself a valid slug.
    if (org !== 'memory') {
      await db.exclusive(async (c) => {
        await c.run(`ATTACH ':memory:' AS ${quoted(org)}`);
        await c.run(`USE ${quoted(org)}`);
      });
    }
    await applyOrgSchema(db);
    await writeOrgSettings(db, { slug: org, currencySymbol: '$' });
    return await commitEvents(db, org, events);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}

async function commitEvents(db: LocalDatabase, org: string, events: Array<{ line: number; body: Record<string, unknown> }>): Promise<FixtureOrg> {
  const validate = createValidateEventStep();
  const state: PlanState = { dedupe: new DedupeWindow(), identities: new IdentityMap(), pendingByClient: new Map(), tombstones: await loadTombstones(db) };
  let lastVisibleAt = 0n;
  let stored = 0;
  let duplicates = 0;
  for (const [i, { line, body }] of events.entries()) {
    const receivedAt = typeof body.sentAt === 'number' ? body.sentAt : 0;
    const outcome = validate({ body: { ...FIXTURE_CREDENTIALS, ...body }, who: { org, environment: 'production' }, receivedAt });
    if (outcome.kind !== 'ok') throw new FixtureRefused(line, `the service refuses this event (412 schema_violation): ${reasons(outcome.entries[0]?.errors)}`);
    const plan = await planEntries(outcome.value.entries.map((entry, index) => ({ seq: i + 1, index, entry })), state);
    plan.lastSeq = i + 1;
    const written = await writeBatch(db, plan, receivedAt, lastVisibleAt, false);
    lastVisibleAt = written.visibleAtMicros;
    stored += written.events;
    duplicates += plan.duplicates;
    for (const key of written.pendingResolved) state.pendingByClient.set(key, (state.pendingByClient.get(key) ?? 1) - 1);
  }
  const pending = [...state.pendingByClient.values()].reduce((sum, n) => sum + n, 0);
  return { db, stored, pending, duplicates, lastVisibleAt };
}

function parseLines(fixture: string): Array<{ line: number; body: Record<string, unknown> }> {
  const events: Array<{ line: number; body: Record<string, unknown> }> = [];
  for (const [i, text] of fixture.split('\n').entries()) {
    if (text.trim() === '') continue;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (error) {
      throw new FixtureRefused(i + 1, `not JSON (${(error as Error).message}); a fixture holds one event per line`);
    }
    if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new FixtureRefused(i + 1, 'not a JSON object; a fixture holds one event per line');
    events.push({ line: i + 1, body: body as Record<string, unknown> });
  }
  return events;
}

function reasons(errors: string | null | undefined): string {
  const list = JSON.parse(errors ?? '[]') as Array<{ path: string; message: string }>;
  return list.map((e) => `${e.path || '/'} ${e.message}`).join('; ');
}

/** Org slugs are `[a-z][a-z0-9_]*`; quoted all the same. */
function quoted(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}
