/**
 * Profiles read per-contact aggregates (contact_activity, contact_orders) folded from the events every
 * few seconds, combined with the events not folded yet. For any sequence of events, commits and folds,
 * they must equal profiles computed from the events alone; a store written before the aggregates
 * existed gets them filled at start.
 */
import { DuckDBInstance } from '@duckdb/node-api';
import fc from 'fast-check';
import t from 'tap';
import { foldContactActivity } from '../../../src/events/compaction/fold-contact-activity.js';
import { ManualClock } from '../../../src/core/context.js';
import { startTestApp, type TestApp } from '../../helpers/app.js';

const EMAILS = ['ada@example.com', 'grace@example.com', 'alan@example.com'];
const CLIENTS = ['c1', 'c2', 'c3'];

type Action =
  | { kind: 'identify'; client: number; email: number; firstName: string | null; city: string | null; userId: string | null }
  | { kind: 'purchase'; email: number; transactionId: string; revenue: number; staging: boolean }
  | { kind: 'anonymous'; client: number }
  | { kind: 'commit' }
  | { kind: 'fold' };

const action: fc.Arbitrary<Action> = fc.oneof(
  fc.record({
    kind: fc.constant('identify' as const),
    client: fc.nat(CLIENTS.length - 1),
    email: fc.nat(EMAILS.length - 1),
    firstName: fc.option(fc.constantFrom('Ada', 'Augusta', 'Grace')),
    city: fc.option(fc.constantFrom('Porto', 'London')),
    userId: fc.option(fc.constantFrom('u-1', 'u-2')),
  }),
  fc.record({
    kind: fc.constant('purchase' as const),
    email: fc.nat(EMAILS.length - 1),
    transactionId: fc.constantFrom('t1', 't2', 't3'),
    revenue: fc.integer({ min: 0, max: 100_000 }).map((cents) => cents / 100),
    staging: fc.boolean(),
  }),
  fc.record({ kind: fc.constant('anonymous' as const), client: fc.nat(CLIENTS.length - 1) }),
  fc.constant({ kind: 'commit' as const }),
  fc.constant({ kind: 'fold' as const }),
);

const PROFILES = 'SELECT * FROM profiles_for($1, NULL::VARCHAR[], folded_through()) ORDER BY email_address';

/** Profiles of one org as comparable JSON, the lifetime value rounded against summation order. */
function comparable(rows: Record<string, unknown>[]): string {
  return JSON.stringify(
    rows.map((row) => ({ ...row, total_lifetime_value: Math.round(Number(row.total_lifetime_value) * 100) })),
    (_key, value: unknown) => (typeof value === 'bigint' ? value.toString() : value),
  );
}

/** The org's profiles computed from the events alone: the aggregates emptied in a rolled-back transaction. */
function profilesFromEventsAlone(h: TestApp, org: string): Promise<Record<string, unknown>[]> {
  return h.db(org).exclusive(async (c) => {
    await c.run('BEGIN TRANSACTION');
    try {
      await c.run('DELETE FROM contact_activity; DELETE FROM contact_orders; DELETE FROM contact_activity_folded');
      return await c.all(PROFILES, [org]);
    } finally {
      await c.run('ROLLBACK');
    }
  });
}

t.test('profiles over folded aggregates equal profiles over the events alone', async (t) => {
  // A manual clock gives every event its own received_at, so "the latest trait wins" has one answer.
  const clock = new ManualClock(Date.UTC(2026, 2, 1));
  const h = await startTestApp(t, { clock });
  let run = 0;

  await fc.assert(
    fc.asyncProperty(fc.array(action, { minLength: 1, maxLength: 25 }), async (actions) => {
      const org = `org_${++run}`;
      const creds = await h.createOrg(org);
      for (const a of actions) {
        clock.advance(1);
        const base = { ...creds.production, sentAt: clock.now() };
        switch (a.kind) {
          case 'identify': {
            const traits = {
              email: EMAILS[a.email],
              ...(a.firstName ? { firstName: a.firstName } : {}),
              ...(a.city ? { address: { city: a.city } } : {}),
              ...(a.userId ? { userId: a.userId } : {}),
            };
            await h.collect({ ...base, type: 'identify', clientId: CLIENTS[a.client], traits });
            break;
          }
          case 'purchase':
            await h.collect({
              ...(a.staging ? creds.staging : creds.production),
              sentAt: clock.now(),
              clientId: 'shop',
              type: 'track',
              event: 'complete_transaction',
              traits: { email: EMAILS[a.email] },
              properties: { transactionId: a.transactionId, revenue: a.revenue, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] },
            });
            break;
          case 'anonymous':
            // No e-mail: resolved by an earlier identify of the client, or pending until a later one.
            await h.collect({ ...base, type: 'track', event: 'custom', clientId: CLIENTS[a.client], properties: { eventName: 'viewed', properties: {} } });
            break;
          case 'commit':
            await h.compacted();
            break;
          case 'fold':
            await h.compacted();
            await h.db(org).transaction(foldContactActivity);
            break;
          default:
            a satisfies never;
        }
      }
      await h.compacted();
      const stored = await h.db(org).all('SELECT 1 FROM events WHERE org = $1', [org]);
      const accepted = actions.filter((a) => a.kind !== 'commit').length;
      if (stored.length > accepted) throw new Error(`more events stored (${stored.length}) than sent (${accepted})`);
      const served = comparable(await h.db(org).all(PROFILES, [org]));
      const fromEvents = comparable(await profilesFromEventsAlone(h, org));
      if (served !== fromEvents) throw new Error(`profiles ${served}\n  from the events alone ${fromEvents}`);
    }),
    { numRuns: 25 },
  );
  t.ok(run >= 25, `${run} generated sequences compared`);
  let folded = 0;
  for (let i = 1; i <= run; i++) folded += (await h.db(`org_${i}`).all('SELECT DISTINCT org, email FROM contact_activity')).length;
  t.ok(folded > 0, 'the sequences folded aggregates that the comparison read');
});

t.test('a store written before the aggregates existed gets them filled at start', async (t) => {
  const dataDir = t.testdir();
  const first = await startTestApp(t, { dataDir });
  const creds = (await first.createOrg('acme')).production;
  const base = { ...creds, clientId: 'c1', sentAt: Date.now() };
  await first.collect({ ...base, type: 'identify', traits: { email: 'ada@example.com', firstName: 'Ada' } });
  await first.collect({ ...base, type: 'track', event: 'complete_transaction', traits: { email: 'ada@example.com' },
    properties: { transactionId: 't1', revenue: 12.5, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] } });
  await first.compacted();
  const before = first.app.profiles.find('acme', 'email', 'ada@example.com');
  t.match(before, { first_name: 'Ada', order_count: 1, total_lifetime_value: 12.5 });
  await first.close();

  // Make it look like a store of the version before the aggregate tables.
  const instance = await DuckDBInstance.create(`${dataDir}/orgs/acme.duckdb`);
  const connection = await instance.connect();
  await connection.run('DROP TABLE contact_activity; DROP TABLE contact_orders; DROP TABLE contact_activity_folded');
  connection.closeSync();
  instance.closeSync();

  const second = await startTestApp(t, { dataDir });
  t.same(second.app.profiles.find('acme', 'email', 'ada@example.com'), before);
  t.same(await second.app.orgStorage!.orgs.org('acme').all('SELECT email, revenue FROM contact_activity'), [{ email: 'ada@example.com', revenue: 12.5 }], 'folded at start');
});
