/**
 * A contact touched only by events that change no more of its profile than its first and last seen, and by
 * sends delivered or held out, has its indexed profile moved on, with no query (profile-materializer.ts). Generated sequences of events of
 * every kind (custom, page views, a context time zone, identifies, registrations, purchases, staging,
 * anonymous ones released by a later identify, imports), received out of order and compacted in batches:
 * the index then holds exactly the profiles a computation from DuckDB gives, field for field and in order.
 */
import fc from 'fast-check';
import t from 'tap';
import type { Database } from '../../../src/db/sql.js';
import type { OrgStorage } from '../../../src/db/org-storage.js';
import { ProfileIndex } from '../../../src/events/profiles/profile-index.js';
import { type ContactKey, ProfileMaterializer } from '../../../src/events/profiles/profile-materializer.js';
import { contactJson } from '../../../src/routes/audience/contacts.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { importContacts, startTestApp } from '../../helpers/app.js';

const EMAILS = ['ada@example.com', 'grace@example.com', 'linus@example.com'];
const KINDS = ['custom', 'page', 'timezone', 'identify', 'registration', 'purchase', 'staging', 'anonymous', 'import', 'compact'] as const;
type Step = { kind: (typeof KINDS)[number]; contact: number; minutes: number };

const step: fc.Arbitrary<Step> = fc.record({
  kind: fc.constantFrom(...KINDS),
  contact: fc.nat({ max: EMAILS.length - 1 }),
  // Receipts out of order, many in the same millisecond (the log's order then settles traits).
  minutes: fc.oneof(fc.constant(0), fc.integer({ min: -600, max: 600 })),
});

t.test('profiles moved on equal profiles computed from DuckDB', async (t) => {
  let now = Date.parse('2026-06-01T12:00:00.000Z');
  const h = await startTestApp(t, { clock: { now: () => now } });
  const orgs = h.app.orgStorage!.orgs;
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 25 }), async (steps) => {
      const org = `o${++run}`;
      const cred = await h.createOrg(org, { currencySymbol: '€' });
      let n = 0;
      for (const { kind, contact, minutes } of steps) {
        const email = EMAILS[contact]!;
        const at = Date.parse('2026-06-01T12:00:00.000Z') + minutes * 60_000;
        now = at;
        const base = { ...cred.production, clientId: `c-${email}`, sentAt: at, messageId: `m-${++n}`, traits: { email } };
        const custom = { ...base, type: 'track', event: 'custom', properties: { eventName: 'booked', properties: { nights: n } } };
        const sent =
          kind === 'custom' ? h.collect(custom)
          : kind === 'page' ? h.collect({ ...base, type: 'track', event: 'page_view' })
          : kind === 'timezone' ? h.collect({ ...custom, context: { timezone: n % 2 ? 'Europe/Lisbon' : 'Asia/Tokyo' } })
          : kind === 'identify' ? h.collect({ ...base, type: 'identify', traits: { email, firstName: `F${n}`, userId: `u-${contact}-${n}`, address: { city: `C${n}` } } })
          : kind === 'registration' ? h.collect({ ...base, type: 'track', event: 'registration', properties: { email }, traits: { email, lastName: `L${n}` } })
          : kind === 'purchase' ? h.collect({ ...base, type: 'track', event: 'complete_transaction', properties: { transactionId: `t${n}`, revenue: n * 1.25, cartItems: [{ productId: 'p', variant: 'v', quantity: 1 }] } })
          : kind === 'staging' ? h.collect({ ...base, ...cred.staging, type: 'identify', traits: { email, firstName: `S${n}` } })
          // No e-mail: held until an identify of its client id names the contact.
          : kind === 'anonymous' ? h.collect({ ...custom, traits: {} })
          : kind === 'import' ? importContacts(h, 'text/csv', `email_address,first_name,tier\n${email},I${n},t${n}\n`, org)
          : h.compacted();
        const res = await sent;
        if (res && res.statusCode >= 300) throw new Error(`${kind}: ${res.statusCode} ${res.body}`);
      }
      await h.compacted();
      const computed = new ProfileIndex();
      await new ProfileMaterializer(orgs, computed).refreshOrg(org);
      t.equal(h.app.profiles.size(org), computed.size(org), `${org}: as many profiles as computed`);
      for (const email of EMAILS) {
        const held = h.app.profiles.lookup(org, 'email', email);
        const expected = computed.lookup(org, 'email', email);
        if (JSON.stringify(held?.profile) !== JSON.stringify(expected?.profile) || JSON.stringify(held?.customFields) !== JSON.stringify(expected?.customFields)) {
          throw new Error(`${org} ${email}: held ${JSON.stringify(held)}, computed ${JSON.stringify(expected)}`);
        }
      }
    }),
    { numRuns: 25 },
  );
});

/** The org storage, counting the sessions opened on the org's database, the next `failures` of them failing. */
function counting(storage: OrgStorage): { storage: OrgStorage; sessions: () => number; fail: (count: number) => void } {
  let sessions = 0;
  let failures = 0;
  const wrapped: OrgStorage = Object.create(storage);
  wrapped.org = (slug: string): Database => {
    const db = storage.org(slug);
    const counted: Database = Object.create(db);
    counted.exclusive = (work) => {
      sessions++;
      if (failures > 0) {
        failures--;
        return Promise.reject(new Error('injected failure'));
      }
      return db.exclusive(work);
    };
    return counted;
  };
  return { storage: wrapped, sessions: () => sessions, fail: (count) => (failures = count) };
}

t.test('a contact is computed again when it is not indexed, touched otherwise, or its last computation failed', async (t) => {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 2, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const local = new LocalOrgStorage(pool);
  await local.org('acme').run(`INSERT INTO org_settings (org, currency_symbol) VALUES ('acme', '$') ON CONFLICT DO NOTHING`);
  await local.org('acme').run(`INSERT INTO contacts (org, email, first_name, custom, updated_at) VALUES ('acme', 'ada@example.com', 'Ada', '{"tier":"gold"}', now())`);
  const { storage, sessions, fail } = counting(local);
  const index = new ProfileIndex();
  const materializer = new ProfileMaterializer(storage, index);
  const seen = (email: string, at: string): ContactKey => ({ org: 'acme', email, seenAt: Date.parse(at) });

  await materializer.refresh([seen('ada@example.com', '2026-06-01T10:00:00.000Z')]);
  t.equal(sessions(), 1, 'not indexed yet: computed');
  t.equal(index.find('acme', 'email', 'ada@example.com')?.first_name, 'Ada');
  t.equal(index.find('acme', 'email', 'ada@example.com')?.last_seen_at, null, 'computed from DuckDB, where that event is not');

  await materializer.refresh([seen('ada@example.com', '2026-06-01T10:00:00.123Z'), seen('ada@example.com', '2026-06-01T09:00:00.000Z')]);
  t.equal(sessions(), 1, 'indexed and only seen: moved on, no query');
  t.match(index.find('acme', 'email', 'ada@example.com'), { first_name: 'Ada', first_seen_at: '2026-06-01T09:00:00.000Z', last_seen_at: '2026-06-01T10:00:00.123Z' });

  await materializer.refresh([seen('ada@example.com', '2026-06-01T09:30:00.000Z')]);
  t.equal(sessions(), 1, 'inside first and last seen: nothing moves');
  t.equal(index.find('acme', 'email', 'ada@example.com')?.last_seen_at, '2026-06-01T10:00:00.123Z');

  await materializer.refresh([seen('ada@example.com', '2026-06-01T11:00:00.000Z'), { org: 'acme', email: 'ada@example.com' }]);
  t.equal(sessions(), 2, 'touched by an event that shapes more than seen: computed');

  fail(1);
  await t.rejects(materializer.refresh([{ org: 'acme', email: 'ada@example.com' }]), /injected failure/);
  await materializer.refresh([seen('ada@example.com', '2026-06-01T12:00:00.000Z')]);
  t.equal(sessions(), 4, 'its last computation failed: computed again, not moved on');
  await materializer.refresh([seen('ada@example.com', '2026-06-01T13:00:00.000Z')]);
  t.equal(sessions(), 4, 'computed since: moved on again');

  fail(1);
  await t.rejects(materializer.refreshOrg('acme'), /injected failure/);
  await materializer.refresh([seen('ada@example.com', '2026-06-01T14:00:00.000Z')]);
  t.equal(sessions(), 6, "the org's whole computation failed: every contact computed again");
});

const FLOWS = ['a', 'B', 'a-b', 'a_1', 'Z9'];
const VARIANTS = [null, 'x', 'A', 'v 1', 'b.2'];
const sendStep = fc.record({
  contact: fc.nat({ max: EMAILS.length - 1 }),
  flow: fc.constantFrom(...FLOWS),
  variant: fc.constantFrom(...VARIANTS),
  status: fc.constantFrom('delivered', 'holdout', 'failed'),
  // Refreshed at once, or together with the sends after it.
  now: fc.boolean(),
});

t.test('sends delivered or held out move profiles on, as a computation gives them', async (t) => {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const local = new LocalOrgStorage(pool);
  let run = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(sendStep, { minLength: 1, maxLength: 20 }), async (steps) => {
      const org = `s${++run}`;
      const db = local.org(org);
      await db.run(`INSERT INTO org_settings (org, currency_symbol) VALUES ($1, '$')`, [org]);
      for (const email of EMAILS) await db.run(`INSERT INTO contacts (org, email, first_name, custom, updated_at) VALUES ($1, $2, 'N', '{}', now())`, [org, email]);
      const { storage, sessions } = counting(local);
      const index = new ProfileIndex();
      const materializer = new ProfileMaterializer(storage, index);
      await materializer.refreshOrg(org);
      const computations = sessions();
      let touched: ContactKey[] = [];
      for (const [i, { contact, flow, variant, status, now }] of steps.entries()) {
        const email = EMAILS[contact]!;
        await db.run(
          `INSERT INTO flow_sends (send_id, org, flow_id, email, event_id, variant, trigger_hash, status, attempts, created_at)
           VALUES ($1, $2, $3, $4, $5, $6::VARCHAR, 'h', $7, 1, now())`,
          [`send-${i}`, org, flow, email, `e-${i}`, variant, status],
        );
        // As the service tells it: a delivered outcome (send-outcomes.ts) or a holdout decided (decision-pipeline.ts).
        if (status !== 'failed') touched.push({ org, email, sent: { flowId: flow, variant, delivered: status === 'delivered' } });
        if (now) [touched] = [[], await materializer.refresh(touched)];
      }
      await materializer.refresh(touched);
      if (sessions() !== computations) throw new Error(`${org}: a send was computed, not moved on`);
      const computed = new ProfileIndex();
      await new ProfileMaterializer(local, computed).refreshOrg(org);
      for (const email of EMAILS) {
        const held = JSON.stringify(index.lookup(org, 'email', email)?.profile);
        const expected = JSON.stringify(computed.lookup(org, 'email', email)?.profile);
        if (held !== expected) throw new Error(`${org} ${email}: held ${held}, computed ${expected}`);
      }
    }),
    { numRuns: 40 },
  );
  t.pass('every profile moved on as computed, with no query');
});

t.test('moving many contacts on lets other work run in between', async (t) => {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 2, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const index = new ProfileIndex();
  const materializer = new ProfileMaterializer(new LocalOrgStorage(pool), index);
  const emails = Array.from({ length: 5_000 }, (_, i) => `c${i}@example.com`);
  for (const email of emails) index.upsert('acme', Object.freeze({ email_address: email, first_seen_at: null, last_seen_at: null }), []);
  let turns = 0;
  const ticking = setInterval(() => turns++, 0);
  await materializer.refresh(emails.map((email) => ({ org: 'acme', email, seenAt: Date.parse('2026-06-01T10:00:00.000Z') })));
  clearInterval(ticking);
  t.ok(turns > 0, `timers ran during the move (${turns} turns)`);
  t.ok(emails.every((email) => index.find('acme', 'email', email)?.last_seen_at === '2026-06-01T10:00:00.000Z'), 'every contact moved on');
});

t.test('receipts move first and last seen without a copy until the profile is read, and the answer follows', async (t) => {
  const index = new ProfileIndex();
  const base = Object.freeze({ email_address: 'ada@example.com', first_seen_at: null, last_seen_at: null, first_name: 'Ada' });
  index.upsert('acme', base, []);
  const contact = index.lookup('acme', 'email', 'ada@example.com')!;
  const fields = ['email_address', 'first_seen_at', 'last_seen_at', 'first_name'];
  const before = contactJson(contact, fields);
  t.equal(contactJson(contact, fields), before, 'the answer is kept while nothing moves');

  await fc.assert(
    fc.property(fc.array(fc.array(fc.integer({ min: Date.parse('2000-01-01'), max: Date.parse('2100-01-01') }), { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 20 }), (moves) => {
      const org = `o-${moves.length}-${moves[0]![0]}`;
      index.upsert(org, base, []);
      const held = index.lookup(org, 'email', 'ada@example.com')!;
      const all: number[] = [];
      for (const receipts of moves) {
        const answered = contactJson(held, fields);
        const moved = receipts.some((ms) => all.length === 0 || ms < Math.min(...all) || ms > Math.max(...all));
        all.push(...receipts);
        index.see(org, held, Math.min(...receipts), Math.max(...receipts));
        const now = contactJson(held, fields);
        if (moved === (now === answered)) throw new Error(`moved ${moved}, but the answer ${now === answered ? 'stayed' : 'changed'}`);
        const expected = { first_seen_at: new Date(Math.min(...all)).toISOString(), last_seen_at: new Date(Math.max(...all)).toISOString() };
        if (JSON.stringify(JSON.parse(now)) !== JSON.stringify({ ...base, ...expected })) throw new Error(`answer ${now}, expected ${JSON.stringify(expected)}`);
        if (held.profile !== held.profile) throw new Error('a profile read twice with no receipt between is copied again');
      }
      if (index.newestSeen(org) !== Math.max(...all)) throw new Error(`newest seen ${index.newestSeen(org)}, receipts up to ${Math.max(...all)}`);
    }),
    { numRuns: 200 },
  );
  t.pass('every answer held the receipts taken in, and changed exactly when they moved first or last seen');

  const read = contact.profile;
  t.equal(read, base, 'a profile never moved is the one upserted');
  index.see('acme', contact, Date.parse('2026-06-01T10:00:00.000Z'), Date.parse('2026-06-01T11:00:00.000Z'));
  t.equal(contact.profile.last_seen_at, '2026-06-01T11:00:00.000Z', 'read after a move: the new last seen');
  t.ok(Object.isFrozen(contact.profile), 'frozen, as the upserted one');
  t.equal(base.last_seen_at, null, 'the upserted profile itself is not changed');
});
