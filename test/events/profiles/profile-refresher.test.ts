/**
 * The refresher paces profile refreshes after each other, so under load one refresh serves many
 * compaction batches and DuckDB stays free for compaction most of the time.
 */
import fc from 'fast-check';
import t, { type Test as Tap } from 'tap';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { type ContactKey, ProfileMaterializer } from '../../../src/events/profiles/profile-materializer.js';
import { ProfileIndex } from '../../../src/events/profiles/profile-index.js';
import { ProfileRefresher, pauseAfter } from '../../../src/events/profiles/profile-refresher.js';
import { StorageUnavailable } from '../../../src/core/unavailable.js';
import { waitFor } from '../../helpers/deadline.js';

async function setup(t: Tap, backlogIntervalMs?: number) {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 2, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const materializer = new ProfileMaterializer(new LocalOrgStorage(pool), new ProfileIndex());
  const refreshed: string[][] = [];
  const realRefresh = materializer.refresh.bind(materializer);
  materializer.refresh = async (keys: ContactKey[]) => {
    refreshed.push(keys.map((k) => k.email));
    return realRefresh(keys);
  };
  const errors: unknown[] = [];
  const refresher = new ProfileRefresher(materializer, (error) => errors.push(error), backlogIntervalMs);
  return { refresher, refreshed, errors };
}

const key = (email: string): ContactKey => ({ org: 'acme', email });

/** Each refresh's start and end, those of `org` taking `ms` longer. */
function slowFor(refresher: ProfileRefresher, org: string, ms: number): string[] {
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<void> } }).materializer;
  const refresh = materializer.refresh.bind(materializer);
  const seen: string[] = [];
  materializer.refresh = async (keys) => {
    const what = `${keys[0]!.org} ${keys.map((k) => k.email.split('@')[0]).join()}`;
    seen.push(`start ${what}`);
    await refresh(keys);
    if (keys[0]!.org === org) await new Promise((r) => setTimeout(r, ms));
    seen.push(`end ${what}`);
  };
  return seen;
}

/** When each refresh started (performance.now()). */
function startsOf(refresher: ProfileRefresher): number[] {
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<void> } }).materializer;
  const refresh = materializer.refresh.bind(materializer);
  const started: number[] = [];
  materializer.refresh = async (keys) => {
    started.push(performance.now());
    await refresh(keys);
  };
  return started;
}

/** Org acme's line, whose last refresh the pause tests set rather than time. */
const acmeLine = (refresher: ProfileRefresher) => (refresher as unknown as { lines: Map<string, { lastEnded: number; lastTook: number; lastSize: number }> }).lines.get('acme')!;

t.test('the first refresh of an idle service starts at once', async (t) => {
  const { refresher, refreshed } = await setup(t);
  refresher.enqueue([key('a@example.com')]);
  t.same(refreshed, [['a@example.com']], 'started in the same tick as the enqueue');
  await refresher.settled();
});

t.test('contacts enqueued right after a refresh wait for the pause and go in one refresh', async (t) => {
  const { refresher, refreshed, errors } = await setup(t);
  refresher.enqueue([key('a@example.com')]);
  await refresher.settled();
  refresher.enqueue([key('b@example.com')]);
  refresher.enqueue([key('c@example.com'), key('d@example.com')]);
  t.same(refreshed, [['a@example.com']], 'nothing started before the pause');
  await refresher.settled();
  t.same(refreshed, [['a@example.com'], ['b@example.com', 'c@example.com', 'd@example.com']]);
  t.same(errors, []);
});

t.test('a refresh that read no database (profiles moved on in memory) starts no pause; one that read does', async (t) => {
  const { refresher } = await setup(t);
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<boolean> } }).materializer;
  const started: string[] = [];
  // As ProfileMaterializer answers: whether it read the org's database (a recompute) or only moved profiles on.
  materializer.refresh = async (keys) => (started.push(keys[0]!.email), !keys[0]!.email.startsWith('moved'));
  refresher.enqueue([key('read-1@example.com')]);
  await refresher.settled();
  refresher.enqueue([key('moved-1@example.com')]);
  t.same(started, ['read-1@example.com'], 'a refresh right after one that read waits out the pause');
  await refresher.settled();
  refresher.enqueue([key('moved-2@example.com')]);
  t.same(started.at(-1), 'moved-2@example.com', 'after one that only moved profiles on (and the pause of the last read over): at once');
  await refresher.settled();
  refresher.enqueue([key('read-2@example.com')]);
  t.same(started.at(-1), 'read-2@example.com', 'a read too: the moves before it did not start a pause');
  await refresher.settled();
  refresher.enqueue([key('read-3@example.com')]);
  t.same(started.at(-1), 'read-2@example.com', 'but one right after a read waits out its pause');
  await refresher.settled();
  t.same(started, ['read-1@example.com', 'moved-1@example.com', 'moved-2@example.com', 'read-2@example.com', 'read-3@example.com']);
});

t.test('contacts from a backlog wait until it is drained (or the backlog interval passes)', async (t) => {
  const HOUR = 3600_000;
  const { refresher, refreshed, errors } = await setup(t, HOUR);
  refresher.enqueue([key('a@example.com')]);
  await refresher.settled();
  refresher.enqueue([key('b@example.com')], { backlog: true });
  // Well past the ordinary pause (50 ms, or 3x a refresh of one contact).
  await new Promise((r) => setTimeout(r, 500));
  t.same(refreshed, [['a@example.com']], 'not refreshed while the backlog lasts');
  refresher.enqueue([key('c@example.com')], { backlog: false });
  await refresher.settled();
  t.same(refreshed, [['a@example.com'], ['b@example.com', 'c@example.com']], 'the end of the backlog refreshes at once, not in an hour');
  t.same(errors, []);
});

t.test('after a long refresh, the next one waits at most the capped pause, not 3× the refresh', async (t) => {
  const { refresher, refreshed, errors } = await setup(t);
  const SLOW_MS = 2_000;
  // A slow materializer (a loaded machine, many contacts): uncapped, the next refresh would wait 3 × 2 s.
  const started: number[] = [];
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<void> } }).materializer;
  const refresh = materializer.refresh.bind(materializer);
  materializer.refresh = async (keys) => {
    started.push(performance.now());
    await refresh(keys);
    if (started.length === 1) await new Promise((r) => setTimeout(r, SLOW_MS));
  };
  refresher.enqueue([key('a@example.com')]);
  await new Promise((r) => setTimeout(r, 100));
  refresher.enqueue([key('b@example.com')]);
  await refresher.settled();
  t.same(refreshed, [['a@example.com'], ['b@example.com']]);
  const waited = started[1]! - (started[0]! + SLOW_MS);
  t.ok(waited < 3 * SLOW_MS - 2_000, `the second refresh started ${Math.round(waited)} ms after the first ended (uncapped: at least ${3 * SLOW_MS} ms)`);
  t.same(errors, []);
});

t.test('the pause after a refresh: three rounds, one when it is the short one, 50–250 ms either way', async (t) => {
  fc.assert(
    fc.property(fc.double({ min: 0, max: 100_000, noNaN: true }), (round) => {
      const long = pauseAfter(round, false);
      const short = pauseAfter(round, true);
      return long === Math.min(250, Math.max(50, 3 * round)) && short === Math.min(250, Math.max(50, round)) && short <= long && short >= 50 && long <= 250;
    }),
  );
  t.equal(pauseAfter(60, false), 180);
  t.equal(pauseAfter(60, true), 60, 'a 60 ms refresh followed by the short pause: 60 ms, not 180');
});

t.test('the short pause follows a refresh a decision waits on, or a small one; the long one a large refresh nobody waits on', async (t) => {
  const { refresher } = await setup(t);
  const started = startsOf(refresher);
  // After a refresh set (not timed: the machine's speed does not enter) to 70 ms and `contacts` contacts, the
  // pause is 3 × 70 = 210 ms or 70 ms. A late timer only makes either later.
  const gapAfter = async (awaited: boolean, contacts: number, email: string) => {
    refresher.enqueue([key(`first-${email}`)]);
    await refresher.settled();
    const last = acmeLine(refresher);
    last.lastTook = 70;
    last.lastSize = contacts;
    last.lastEnded = performance.now();
    const from = last.lastEnded;
    refresher.enqueue([key(email)]);
    await refresher.whenRefreshed('acme', { awaited });
    return started.at(-1)! - from;
  };
  const large = await gapAfter(false, 500, 'a@example.com');
  const awaited = await gapAfter(true, 500, 'b@example.com');
  const small = await gapAfter(false, 99, 'c@example.com');
  t.ok(large >= 205, `after 500 contacts, nobody waiting: the next refresh started ${Math.round(large)} ms after (≥ 210 ms)`);
  t.ok(awaited >= 69 && awaited < 200, `after 500 contacts, a decision waiting: ${Math.round(awaited)} ms after (≥ 70 ms, well under 210)`);
  t.ok(small >= 69 && small < 200, `after 99 contacts, nobody waiting: ${Math.round(small)} ms after (≥ 70 ms, well under 210)`);
  await refresher.settled();
});

t.test('a wait that comes while the refresh is already waiting out its pause shortens that pause at once', async (t) => {
  const { refresher } = await setup(t);
  const started = startsOf(refresher);
  refresher.enqueue([key('a@example.com')]);
  await refresher.settled();
  const last = acmeLine(refresher);
  // A 80 ms refresh of 500 contacts: the long pause 240 ms, awaited 80 ms.
  last.lastTook = 80;
  last.lastSize = 500;
  last.lastEnded = performance.now();
  const from = last.lastEnded;
  refresher.enqueue([key('b@example.com')]);
  // The drain now sleeps until the plain pause ends; the decision's wait comes 20 ms into it.
  await new Promise((r) => setTimeout(r, 20));
  t.equal(started.length, 1, 'not started before the wait');
  await refresher.whenRefreshed('acme', { awaited: true });
  const gap = started[1]! - from;
  t.ok(gap >= 79 && gap < 220, `started ${Math.round(gap)} ms after the last ended (plain: 240)`);
});

t.test('`refreshed` is told once the contacts are in the index, at once when there are none', async (t) => {
  const { refresher, refreshed } = await setup(t);
  const told: string[] = [];
  refresher.enqueue([], { refreshed: () => told.push('none') });
  t.same(told, ['none'], 'no contacts: nothing to wait for');
  refresher.enqueue([key('a@example.com')], { refreshed: () => told.push(`a after ${refreshed.length} refresh`) });
  refresher.enqueue([key('b@example.com')], { refreshed: () => told.push(`b after ${refreshed.length} refreshes`) });
  t.same(told, ['none'], 'not before the refresh ends');
  await refresher.settled();
  t.same(told, ['none', 'a after 1 refresh', 'b after 2 refreshes']);
});

t.test('contacts enqueued as a refresh run ends are refreshed, not left until the next enqueue', async (t) => {
  const { refresher, refreshed, errors } = await setup(t);
  // The enqueue lands in the microtask right after the run's last refresh: the run has seen an empty
  // queue and is ending (a compaction report handled between its end and its bookkeeping).
  refresher.enqueue([key('a@example.com')], { refreshed: () => queueMicrotask(() => refresher.enqueue([key('b@example.com')])) });
  await waitFor(() => refreshed.length >= 2, { timeoutMs: 30_000, what: "b's refresh" }).catch(() => undefined);
  t.same(refreshed, [['a@example.com'], ['b@example.com']], 'b refreshed without another enqueue');
  await refresher.settled();
  t.same(errors, []);
});

t.test('a refresh the storage process was away for is made again, its waiters told only then; one org failing leaves the others refreshed', async (t) => {
  const { refresher, refreshed, errors } = await setup(t);
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<void> } }).materializer;
  const refresh = materializer.refresh.bind(materializer);
  let away = 2;
  const tries: string[] = [];
  materializer.refresh = async (keys) => {
    tries.push(keys.map((k) => k.email).join());
    if (keys.some((k) => k.org === 'damaged')) throw new Error('damaged file');
    if (away-- > 0) throw new StorageUnavailable('it was ended by SIGKILL');
    await refresh(keys);
  };
  const told: string[] = [];
  refresher.enqueue([key('a@example.com'), { org: 'damaged', email: 'd@example.com' }], { refreshed: () => told.push(`a after ${tries.length} tries`) });
  const acme = refresher.whenRefreshed('acme').then(() => told.push('acme refreshed'));
  await refresher.settled();
  await acme;
  t.same(tries, ['a@example.com', 'd@example.com', 'a@example.com', 'a@example.com'], 'acme tried until the storage process answered; the damaged org once');
  t.same(refreshed, [['a@example.com']], 'and refreshed');
  t.same(told, ['a after 4 tries', 'acme refreshed'], 'waiters told after the refresh that was made');
  t.equal(errors.length, 1, 'the damaged org logged');
  t.match(String(errors[0]), /damaged file/);
});

t.test('a storage process that stays away: the contacts are given up after a bounded number of tries, and said so', async (t) => {
  const { refresher, errors } = await setup(t);
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<void> } }).materializer;
  let tries = 0;
  materializer.refresh = async () => {
    tries++;
    throw new StorageUnavailable('the service is shutting down');
  };
  let told = false;
  refresher.enqueue([key('a@example.com')], { refreshed: () => (told = true) });
  await refresher.settled();
  t.ok(told && tries > 1 && tries < 10, `gave up after ${tries} tries`);
  t.match(String(errors.at(-1)), /profiles of 1 contacts not refreshed after/);
});

t.test("one org's slow refreshes and their pause do not hold another org's", async (t) => {
  const { refresher, errors } = await setup(t);
  // The slow org's refresh takes 1 s (many contacts, a loaded machine): its next one waits its pause, capped at 250 ms.
  const seen = slowFor(refresher, 'slow', 1_000);
  refresher.enqueue([{ org: 'slow', email: 'a@example.com' }]);
  await refresher.settled();
  refresher.enqueue([{ org: 'slow', email: 'b@example.com' }]);
  refresher.enqueue([{ org: 'quick', email: 'c@example.com' }]);
  const quick = refresher.whenRefreshed('quick').then(() => seen.push('quick told'));
  const slow = refresher.whenRefreshed('slow').then(() => seen.push('slow told'));
  await Promise.all([quick, slow, refresher.settled()]);
  t.same(
    seen,
    ['start slow a', 'end slow a', 'start quick c', 'end quick c', 'quick told', 'start slow b', 'end slow b', 'slow told'],
    "the quick org's contacts are refreshed during the slow org's pause, and told before the slow org's next refresh",
  );
  t.same(errors, []);
});

t.test('orgs with contacts due take turns: a new org goes before an org served since it came', async (t) => {
  const { refresher, errors } = await setup(t);
  const materializer = (refresher as unknown as { materializer: { refresh(keys: ContactKey[]): Promise<void> } }).materializer;
  const refresh = materializer.refresh.bind(materializer);
  const orgs: string[] = [];
  let release: () => void = () => {};
  const held = new Promise<void>((r) => (release = r));
  materializer.refresh = async (keys) => {
    orgs.push(keys[0]!.org);
    await refresh(keys);
    // The first refresh holds until all three orgs have contacts queued.
    if (orgs.length === 1) await held;
  };
  refresher.enqueue([{ org: 'one', email: 'a@example.com' }]);
  refresher.enqueue([{ org: 'two', email: 'b@example.com' }]);
  refresher.enqueue([{ org: 'one', email: 'c@example.com' }]);
  refresher.enqueue([{ org: 'three', email: 'd@example.com' }]);
  release();
  await refresher.settled();
  t.same(orgs, ['one', 'two', 'three', 'one'], 'one org, then each other org once, before the first again');
  t.same(errors, []);
});

t.test("another org's long refresh counts in a round for at most the pause: it does not hold an org's next refresh for its length", async (t) => {
  const { refresher, errors } = await setup(t);
  // The long org's refresh takes 4 s (a whole org, or a try that waited out a storage restart).
  const seen = slowFor(refresher, 'long', 4_000);
  refresher.enqueue([{ org: 'long', email: 'a@example.com' }]);
  refresher.enqueue([{ org: 'quick', email: 'b@example.com' }]);
  await refresher.whenRefreshed('quick');
  // Nothing else comes: the quick org's next contacts wait for its pause (≤ 250 ms) and the others' share of
  // the round (≤ 250 ms), not for the long refresh's 4 s.
  refresher.enqueue([{ org: 'quick', email: 'c@example.com' }]);
  const ruler = new Promise<void>((resolve) => setTimeout(() => resolve(void seen.push('2 s passed')), 2_000));
  await Promise.all([refresher.whenRefreshed('quick'), ruler, refresher.settled()]);
  t.same(seen, ['start long a', 'end long a', 'start quick b', 'end quick b', 'start quick c', 'end quick c', '2 s passed'], "the quick org's next refresh well before the long one's length");
  t.same(errors, []);
});

t.test('generated enqueues over orgs, slow and failing refreshes: one refresh at a time, every waiter told once and only after its contacts were refreshed (or given up)', async (t) => {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const storage = new LocalOrgStorage(pool);
  const op = fc.record({
    org: fc.constantFrom('one', 'two', 'three', 'four'),
    contacts: fc.integer({ min: 1, max: 3 }),
    gapMs: fc.integer({ min: 0, max: 30 }),
    // A flow decision waits on it (the shorter pause) or bookkeeping does.
    awaited: fc.boolean(),
    // How a refresh that starts with these contacts goes: its time, and whether the storage process is away once (made again) or it fails.
    tookMs: fc.integer({ min: 0, max: 30 }),
    fault: fc.constantFrom('none', 'none', 'none', 'away', 'fails'),
  });
  let runs = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 10 }), async (ops) => {
      const materializer = new ProfileMaterializer(storage, new ProfileIndex());
      const real = materializer.refresh.bind(materializer);
      const errors: unknown[] = [];
      const refresher = new ProfileRefresher(materializer, (error) => errors.push(error));
      const plan = new Map<string, (typeof ops)[number]>();
      /** Contacts a refresh ended with (well, or given up), and how many refreshes run now. */
      const done = new Set<string>();
      let running = 0;
      let overlapped = false;
      let failed = 0;
      const tries = new Map<string, number>();
      materializer.refresh = async (keys) => {
        if (++running > 1) overlapped = true;
        try {
          const first = keys[0]!.email;
          const how = plan.get(first)!;
          await new Promise((r) => setTimeout(r, how.tookMs));
          tries.set(first, (tries.get(first) ?? 0) + 1);
          if (how.fault === 'away' && tries.get(first) === 1) throw new StorageUnavailable('it was ended by SIGKILL');
          if (how.fault === 'fails') {
            for (const k of keys) done.add(k.email);
            failed++;
            throw new Error('damaged file');
          }
          await real(keys);
          for (const k of keys) done.add(k.email);
          return true;
        } finally {
          running--;
        }
      };
      const problems: string[] = [];
      const calls: number[] = [];
      const waits: Array<Promise<void>> = [];
      let n = 0;
      for (const [i, o] of ops.entries()) {
        const keys = Array.from({ length: o.contacts }, () => ({ org: o.org, email: `c${n++}@example.com` }));
        for (const k of keys) plan.set(k.email, o);
        const notDone = (what: string) => {
          const missing = keys.filter((k) => !done.has(k.email)).map((k) => k.email);
          if (missing.length > 0) problems.push(`${what} told before ${missing.join()} refreshed`);
        };
        calls[i] = 0;
        let told: () => void = () => {};
        waits.push(new Promise((resolve) => (told = resolve)));
        refresher.enqueue(keys, { refreshed: () => (calls[i] = (calls[i] ?? 0) + 1, notDone(`refreshed #${i}`), told()) });
        waits.push(refresher.whenRefreshed(o.org, { awaited: o.awaited }).then(() => notDone(`whenRefreshed(${o.org}) #${i}`)));
        await new Promise((r) => setTimeout(r, o.gapMs));
      }
      await Promise.all(waits);
      await refresher.settled();
      runs++;
      // Each refresh that failed is logged once; one the storage process was away for is not (it is made again).
      const ok = !overlapped && problems.length === 0 && calls.every((c) => c === 1) && done.size === n && errors.length === failed;
      if (!ok) t.comment(JSON.stringify({ overlapped, problems, calls, done: done.size, n, failed, errors: errors.map(String) }));
      return ok;
    }),
    { numRuns: 30 },
  );
  t.equal(runs, 30, 'every generated run held');
});
