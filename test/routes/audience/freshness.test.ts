/**
 * How fresh an Audience API answer is (issue 41): `meta` on every contact answer (one contact, each found
 * entry of a batch) with the contact's newest folded event, the answer's time and the org's lag; and read
 * your writes — `after=<messageId>` answers only once that event is in the profile, else 409
 * profile_not_current after `wait`, an unknown or another org's messageId alike. Generated identifies
 * (addresses up to 254 characters, names in any script), sent concurrently through the storage process
 * as in production, each looked up at once with its messageId: none may miss its traits. The same on
 * JetStream; a process without the org's compactor says so at once; the storage process killed while
 * lookups wait: each answers, none 500 or hung.
 */
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { isEmailAddress } from '../../../src/core/domain.js';
import { Freshness } from '../../../src/events/profiles/freshness.js';
import { ProfileIndex } from '../../../src/events/profiles/profile-index.js';
import { MAX_WAIT_MS, waitForAfter } from '../../../src/routes/audience/fresh.js';
import { hasNatsServerBinary, startNatsServer } from '../../helpers/nats-server.js';
import { storagePid } from '../../helpers/storage-pid.js';
import { ADMIN_KEY, startTestApp, STORAGE_PROCESS, type TestApp, waitFor } from '../../helpers/app.js';

const T0 = Date.UTC(2026, 5, 10, 12);

async function withOrgs(h: TestApp, org: Record<string, unknown> = {}) {
  const creds = { acme: await h.createOrg('acme', { audienceApi: true, rateLimit: 100_000, ...org }), beta: await h.createOrg('beta', { audienceApi: true, rateLimit: 100_000, ...org }) };
  const token = async (slug: string) => {
    const res = await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com' });
    if (res.statusCode !== 201) throw new Error(res.body);
    return res.json().token as string;
  };
  return { creds, acme: await token('acme'), beta: await token('beta') };
}

let clients = 0;

function identify(h: TestApp, cred: { partnerId: string; partnerSecret: string }, email: string, firstName: string, messageId?: string) {
  return h.collect({
    partnerId: cred.partnerId,
    partnerSecret: cred.partnerSecret,
    clientId: `c-${clients++}`,
    sentAt: Date.now(),
    type: 'identify',
    traits: { email, firstName },
    ...(messageId ? { messageId } : {}),
  });
}

function lookup(h: TestApp, token: string, query: string) {
  return h.app.inject({ method: 'GET', url: `/audience/v2/contacts?${query}`, headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });
}

t.test('meta: the contact\'s newest folded event, the answer\'s time, the org\'s lag (test clock)', async (t) => {
  const clock = new ManualClock(T0);
  const h = await startTestApp(t, { clock });
  const { creds, acme } = await withOrgs(h);
  const imported = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/contacts/import',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'text/csv' },
    payload: 'email_address,first_name\ngrace@example.com,Grace\n',
  });
  t.equal(imported.statusCode, 200, imported.body);
  t.equal((await identify(h, creds.acme.production, 'ada@example.com', 'Ada')).statusCode, 200);
  await h.compacted();
  clock.advance(1_500);

  const ada = await lookup(h, acme, 'identity=email:ada@example.com');
  t.same(ada.json().meta, { eventsThrough: new Date(T0).toISOString(), computedAt: new Date(T0 + 1_500).toISOString(), lagMs: 0 }, 'every event folded: no lag');
  t.same((await lookup(h, acme, 'identity=email:grace@example.com')).json().meta.eventsThrough, null, 'imported only: no event folded');

  // Compaction held: what is acknowledged now is not in the profiles.
  const compaction = h.app.orgStorage!.compaction!;
  await compaction.stop();
  clock.advance(3_000);
  const pending = await identify(h, creds.acme.production, 'ada@example.com', 'Augusta');
  t.equal(pending.statusCode, 200);
  const behind = await lookup(h, acme, 'identity=email:ada@example.com');
  t.equal(behind.json().contact.first_name, 'Ada', 'not folded yet');
  t.equal(behind.json().meta.lagMs, 4_500, 'the newest acknowledged event is 4.5 s after the newest folded one');
  const batch = await h.app.inject({
    method: 'POST',
    url: '/audience/v2/contacts/batch',
    headers: { authorization: `Bearer ${acme}`, accept: 'application/json', 'content-type': 'application/json' },
    payload: JSON.stringify({ identities: ['email:ada@example.com', 'email:nobody@example.com'] }),
  });
  t.same(batch.json().contacts[0].meta, behind.json().meta, 'a batch entry carries the same meta');
  t.notOk('meta' in batch.json().contacts[1], 'a not_found entry has none');

  const notYet = await lookup(h, acme, `identity=email:ada@example.com&after=${pending.json().messageId}&wait=50`);
  t.equal(notYet.statusCode, 409, 'not reflected within the wait');
  t.match(notYet.json(), { code: 'profile_not_current', detail: /retry after 5 s/ });
  t.equal(notYet.headers['retry-after'], '5', 'Retry-After from the lag, rounded up');

  // Compaction resumes while a lookup waits for the event: it answers once the event is in the profile.
  const waiting = lookup(h, acme, `identity=email:ada@example.com&after=${pending.json().messageId}&wait=${MAX_WAIT_MS}`);
  await compaction.start();
  const reflected = await waiting;
  t.equal(reflected.statusCode, 200, reflected.body);
  t.equal(reflected.json().contact.first_name, 'Augusta', 'the event is in the answer');
  t.same(reflected.json().meta, { eventsThrough: new Date(T0 + 4_500).toISOString(), computedAt: new Date(T0 + 4_500).toISOString(), lagMs: 0 });
});

t.test('read your writes: generated identifies, each looked up at once with after=, none misses its traits', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const { creds, acme } = await withOrgs(h);
  // Addresses of every length up to 254 (a 64-character local part, long domain labels), names in any script.
  const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/);
  const email = fc
    .tuple(fc.stringMatching(/^[a-z0-9][a-z0-9._+-]{0,62}[a-z0-9]$/).filter((l) => !l.includes('..')), fc.array(label, { minLength: 1, maxLength: 4 }))
    .map(([local, labels]) => `${local}@${[...labels, 'example', 'com'].join('.')}`)
    .filter((e) => e.length <= 254 && isEmailAddress(e));
  const name = fc.string({ unit: 'grapheme', minLength: 1, maxLength: 40 }).filter((n) => n.trim() === n && n.length > 0);
  let pairs = 0;
  await fc.assert(
    fc.asyncProperty(fc.uniqueArray(fc.tuple(email, name), { minLength: 1, maxLength: 40, selector: ([e]) => e.toLowerCase() }), async (people) => {
      // Concurrently, as a backend's requests arrive: each identify, then its lookup as soon as it is acknowledged.
      await Promise.all(
        people.map(async ([address, first]) => {
          const sent = await identify(h, creds.acme.production, address, first);
          if (sent.statusCode !== 200) throw new Error(`identify ${address}: ${sent.statusCode} ${sent.body}`);
          const res = await lookup(h, acme, `identity=${encodeURIComponent(`email:${address}`)}&after=${sent.json().messageId}&wait=${MAX_WAIT_MS}`);
          if (res.statusCode !== 200) throw new Error(`after= lookup of ${address}: ${res.statusCode} ${res.body}`);
          if (res.json().contact.first_name !== first) throw new Error(`${address}: answered ${JSON.stringify(res.json().contact.first_name)}, sent ${JSON.stringify(first)}`);
          if (typeof res.json().meta.eventsThrough !== 'string') throw new Error(`${address}: no eventsThrough`);
          pairs++;
        }),
      );
    }),
    { numRuns: Number(process.env.RUNS ?? 8), endOnFailure: true },
  );
  t.ok(pairs > 0, `${pairs} identify → lookup pairs, each answered with its traits`);
});

t.test('an unknown messageId, or another org\'s, waits and answers 409 alike; the parameters are checked', async (t) => {
  const h = await startTestApp(t);
  const { creds, acme, beta } = await withOrgs(h);
  const own = await identify(h, creds.acme.production, 'ada@example.com', 'Ada', 'acme-identify-1');
  const theirs = await identify(h, creds.beta.production, 'mallory@example.com', 'Mallory', 'beta-identify-1');
  t.equal(own.statusCode + theirs.statusCode, 400);
  await h.compacted();

  t.equal((await lookup(h, acme, 'identity=email:ada@example.com&after=acme-identify-1')).statusCode, 200, 'its own, reflected: at once');
  const answers = new Set<string>();
  for (const after of ['beta-identify-1', 'never-sent', 'acme-identify-1x']) {
    const started = performance.now();
    const res = await lookup(h, acme, `identity=email:ada@example.com&after=${after}&wait=200`);
    t.equal(res.statusCode, 409, after);
    t.equal(res.json().code, 'profile_not_current');
    t.ok(performance.now() - started >= 190, `${after}: waited the wait`);
    const { requestId: _r, ...problem } = res.json();
    answers.add(JSON.stringify({ ...problem, detail: problem.detail.replace(after, 'X') }) + res.headers['retry-after']);
  }
  t.equal(answers.size, 1, "another org's id is answered as an unknown one, word for word");
  t.equal((await lookup(h, beta, 'identity=email:mallory@example.com&after=beta-identify-1')).statusCode, 200, 'the other org reads its own');

  for (const [query, said] of [
    ['after=x&wait=5001', /wait must be a whole number of milliseconds from 0 to 5000/],
    ['after=x&wait=-1', /wait must be/],
    ['after=x&wait=1e3', /wait must be/],
    ['after=x&wait=', /wait must be/],
    ['after=x&after=y', /after must be one messageId/],
    [`after=${'x'.repeat(513)}`, /after must be one messageId of 1 to 512/],
    ['after=', /after must be one messageId/],
    ['wait=100', /wait is for after/],
  ] as const) {
    const res = await lookup(h, acme, `identity=email:ada@example.com&${query}`);
    t.equal(res.statusCode, 400, query);
    t.match(res.json(), { code: 'invalid_request', detail: said }, query);
  }
  // The identity is checked before any wait.
  const started = performance.now();
  t.equal((await lookup(h, acme, `identity=nope&after=never&wait=${MAX_WAIT_MS}`)).json().code, 'invalid_identity');
  t.ok(performance.now() - started < MAX_WAIT_MS, 'refused without waiting');

  const batch = (body: unknown) =>
    h.app.inject({ method: 'POST', url: '/audience/v2/contacts/batch', headers: { authorization: `Bearer ${acme}`, accept: 'application/json', 'content-type': 'application/json' }, payload: JSON.stringify(body) });
  t.equal((await batch({ identities: ['email:ada@example.com'], after: 'acme-identify-1', wait: 100 })).statusCode, 200, 'a batch reads its writes too');
  t.equal((await batch({ identities: ['email:ada@example.com'], after: 'beta-identify-1', wait: 100 })).json().code, 'profile_not_current');
  t.equal((await batch({ identities: ['email:ada@example.com'], wait: 100 })).json().code, 'invalid_request');
  t.equal((await batch({ identities: ['email:ada@example.com'], after: 'x', wait: 6000 })).json().code, 'invalid_request');
});

t.test('many lookups waiting on ids that never come leave nothing behind, and others answer meanwhile', async (t: Test) => {
  const h = await startTestApp(t);
  const { creds, acme } = await withOrgs(h);
  t.equal((await identify(h, creds.acme.production, 'ada@example.com', 'Ada')).statusCode, 200);
  await h.compacted();
  let settled = 0;
  const waiting = Array.from({ length: 200 }, (_, i) =>
    lookup(h, acme, `identity=email:ada@example.com&after=never-${i}&wait=${MAX_WAIT_MS}`).finally(() => settled++),
  );
  // Commits of the org come and go while they wait: each asks again, none answers early.
  for (let i = 0; i < 5; i++) t.equal((await identify(h, creds.acme.production, `other${i}@example.com`, 'O')).statusCode, 200);
  t.equal((await lookup(h, acme, 'identity=email:ada@example.com')).statusCode, 200, 'a plain lookup is not held up');
  t.equal(settled, 0, 'answered while the 200 still wait');
  const answers = await Promise.all(waiting);
  t.same(new Set(answers.map((a) => a.statusCode)), new Set([409]));
  t.equal((h.app.freshness as unknown as { waiting: Map<string, unknown> }).waiting.size, 0, 'no waiter is kept');
});

t.test('a process without the org\'s compactor says at once that it cannot tell', async (t) => {
  const freshness = new Freshness(new ProfileIndex());
  const started = performance.now();
  const error = await waitForAfter(freshness, 'acme', 'some-id', '5000').then(() => undefined, (e: unknown) => e);
  t.match(error, { code: 'profile_not_current', detail: /keeps no compactor for this org.*ROLES include compactor/ });
  t.ok(performance.now() - started < MAX_WAIT_MS, 'without waiting out the wait');
  t.equal(freshness.lagMs('acme'), 0, 'no acknowledgement seen here: no lag it could tell');
});

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
natsTest('read your writes on JetStream, one process', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  const h = await startTestApp(t, { dataDir, natsUrl: nats.url });
  const { creds, acme } = await withOrgs(h);
  for (let i = 0; i < 10; i++) {
    const sent = await identify(h, creds.acme.production, `j${i}@example.com`, `Jet${i}`);
    t.equal(sent.statusCode, 200);
    const res = await lookup(h, acme, `identity=email:j${i}@example.com&after=${sent.json().messageId}&wait=${MAX_WAIT_MS}`);
    t.equal(res.statusCode, 200, res.body);
    t.equal(res.json().contact.first_name, `Jet${i}`);
  }
});

t.test("the storage process killed: the new one tells again the commits since the last report the service got (one whose report died with the old one is not left stale)", async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const { creds } = await withOrgs(h);
  t.equal((await identify(h, creds.acme.production, 'ada@example.com', 'Ada')).statusCode, 200);
  await h.compacted();
  const told: string[] = [];
  h.app.storageEvents.onCompacted((report) => told.push(...report.touched.map((k) => `${k.org} ${k.email}`)));
  const pid = storagePid(process.pid);
  process.kill(pid!, 'SIGKILL');
  // No event since: only the telling again reports ada's commit, the last one reported.
  await waitFor(() => told.includes('acme ada@example.com') || undefined, { what: "ada's commit told again by the new storage process", timeoutMs: 30_000 });
  t.not(storagePid(process.pid), pid, 'a new storage process');
  t.same(told, ['acme ada@example.com'], 'that commit, nothing else');
});

t.test('the storage process killed while lookups wait with after=: each answers (200, 409 or 503), none 500 or hung; then it reads writes again', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const { creds, acme } = await withOrgs(h);
  t.equal((await identify(h, creds.acme.production, 'ada@example.com', 'Ada')).statusCode, 200);
  await h.compacted();
  // Waiting lookups: on ids that never come, and on identifies just acknowledged.
  const waiting: Array<Promise<{ statusCode: number; body: string }>> = [];
  for (let i = 0; i < 20; i++) waiting.push(lookup(h, acme, `identity=email:ada@example.com&after=never-${i}&wait=${MAX_WAIT_MS}`));
  for (let i = 0; i < 20; i++) {
    const sent = await identify(h, creds.acme.production, `p${i}@example.com`, `P${i}`);
    t.equal(sent.statusCode, 200);
    waiting.push(lookup(h, acme, `identity=email:p${i}@example.com&after=${sent.json().messageId}&wait=${MAX_WAIT_MS}`));
  }
  const pid = storagePid(process.pid);
  t.ok(pid, 'the storage process runs');
  process.kill(pid!, 'SIGKILL');
  const answers = await Promise.all(waiting);
  const statuses = [...new Set(answers.map((a) => a.statusCode))].sort();
  t.ok(statuses.every((s) => [200, 409, 503].includes(s)), `each answered 200, 409 or 503: ${statuses.join(', ')}`);
  for (const a of answers.filter((a) => a.statusCode !== 200)) t.match(JSON.parse(a.body), { code: /^(profile_not_current|storage_unavailable|org_unavailable)$/ }, 'a problem with a code');
  // The storage process comes back: an identify is read back with after= again.
  await waitFor(() => storagePid(process.pid) !== undefined && storagePid(process.pid) !== pid, { what: 'a new storage process', timeoutMs: 30_000 });
  const again = await waitFor(
    async () => {
      const sent = await identify(h, creds.acme.production, 'after@example.com', 'After');
      if (sent.statusCode !== 200) return undefined;
      const res = await lookup(h, acme, `identity=email:after@example.com&after=${sent.json().messageId}&wait=${MAX_WAIT_MS}`);
      return res.statusCode === 200 ? res : undefined;
    },
    { what: 'read your writes after the restart', timeoutMs: 30_000 },
  );
  t.equal(again.json().contact.first_name, 'After');
});
