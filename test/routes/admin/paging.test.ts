/**
 * Samples and quarantine come a page at a time: every row once, in order, while events keep arriving;
 * identical quarantine rows are each given once; a page stays under 512 KiB whatever `limit` says; bad
 * limits are 400 invalid_request and every cursor the service did not write for that list, org and
 * filter is 400 invalid_cursor — never a 500, never another org's rows.
 */
import t from 'tap';
import { customEvent, startTestApp, type OrgCredentials, type TestApp } from '../../helpers/app.js';
import { pageAll } from '../../helpers/paging.js';

type Page = { nextCursor: string | null } & Record<string, unknown>;

function collectMany(h: TestApp, cred: OrgCredentials['production'], ids: string[], extra: Record<string, unknown> = {}) {
  return h.batch({ ...cred, batch: ids.map((id) => ({ ...customEvent(cred, { messageId: id, ...extra }), partnerId: undefined, partnerSecret: undefined })) });
}

t.test('samples: every event once, newest first, while new events arrive between pages', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const before = Array.from({ length: 53 }, (_, i) => `m-${String(i).padStart(3, '0')}`);
  t.equal((await collectMany(h, cred, before.slice(0, 20))).statusCode, 200);
  t.equal((await collectMany(h, cred, before.slice(20))).statusCode, 200);
  await h.compacted();

  let added = 0;
  const { items, pages } = await pageAll(t, h, '/admin/v1/orgs/acme/events/samples', 'events', 7, async () => {
    await h.collect(customEvent(cred, { messageId: `new-${added++}` }));
    await h.compacted();
  });
  const ids = items.map((e) => e.messageId as string);
  t.equal(pages, 8, '53 events, 7 a page');
  t.same([...ids].sort(), [...before].sort(), 'each event that was there once; none that came later');
  const times = items.map((e) => Date.parse(e.receivedAt as string));
  t.same(times, [...times].sort((a, b) => b - a), 'newest first');

  const filtered = await pageAll(t, h, '/admin/v1/orgs/acme/events/samples?env=production&eventType=custom_booking_completed', 'events', 10);
  t.equal(filtered.items.length, 53 + added, 'with filters, every event of the type');
  const first = (await h.admin('GET', '/admin/v1/orgs/acme/events/samples')).json() as Page;
  t.equal((first.events as unknown[]).length, 20, 'samples default to 20');
});

t.test('quarantine: identical rows are each given once; pages while rejections arrive', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  for (let i = 0; i < 12; i++) t.equal((await h.collect(customEvent(cred, { event: 'bogus' }))).statusCode, 412);
  // Collect gives each rejected event an id of its own, but the log is the source of truth: five
  // identical rejections in one record (another writer, a replay) are five identical quarantine rows.
  const twin = { kind: 'rejected' as const, org: 'acme', environment: 'production' as const, messageId: 'twin', receivedAt: Date.now(), body: '{"type":"bogus"}', code: 'schema_violation', errors: '[]', facts: null };
  await h.app.committer!.commitEntries([twin, twin, twin, twin, twin]);
  await h.compacted();
  const snapshot = (await h.admin('GET', '/admin/v1/orgs/acme/quarantine?limit=1000')).json() as Page;
  t.equal(snapshot.nextCursor, null, 'one page holds them all');
  const ids = (page: Array<Record<string, unknown>>) => page.map((e) => e.id as string).sort();
  const all = ids(snapshot.events as Array<Record<string, unknown>>);
  t.equal(all.length, 17);
  t.equal(all.filter((id) => id === 'twin').length, 5, 'five identical rows');

  let added = 0;
  const paged = await pageAll(t, h, '/admin/v1/orgs/acme/quarantine', 'events', 2, async () => {
    await h.collect(customEvent(cred, { event: 'bogus' }));
    added++;
    await h.compacted();
  });
  t.same(ids(paged.items), all, 'every row that was there once, the identical ones included; none that came later');
  for (const limit of [1, 3, 4, 5]) {
    const again = await pageAll(t, h, '/admin/v1/orgs/acme/quarantine', 'events', limit);
    t.equal(again.items.filter((e) => e.id === 'twin').length, 5, `limit ${limit}: the five identical rows`);
    t.equal(new Set(again.items.map((e) => e.id)).size, 17 + added - 4, `limit ${limit}: every other row once`);
  }
});

t.test('a page stays under 512 KiB whatever the limit; the rest follows by cursor', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const big = 'x'.repeat(30_000);
  for (let i = 0; i < 40; i++) {
    const res = await h.collect(customEvent(cred, { messageId: `big-${i}`, properties: { eventName: 'big', properties: { blob: big } } }));
    t.equal(res.statusCode, 200);
  }
  await h.compacted();
  const res = await h.admin('GET', '/admin/v1/orgs/acme/events/samples?limit=500');
  t.equal(res.statusCode, 200);
  t.ok(res.body.length < 512 * 1024 + 35_000, `one page is ${res.body.length} bytes`);
  const page = res.json() as Page;
  t.ok((page.events as unknown[]).length < 40, 'fewer events than asked for');
  t.type(page.nextCursor, 'string', 'and a cursor to the rest');
  const all = await pageAll(t, h, '/admin/v1/orgs/acme/events/samples', 'events', 500);
  t.equal(new Set(all.items.map((e) => e.messageId)).size, 40, 'every event, once');
});

t.test('limits and cursors that are not right are 400s, never 500s, and reach no other org', async (t) => {
  const h = await startTestApp(t);
  const acme = (await h.createOrg('acme')).production;
  const globex = (await h.createOrg('globex')).production;
  t.equal((await collectMany(h, acme, ['a1', 'a2', 'a3'])).statusCode, 200);
  t.equal((await collectMany(h, globex, ['g1', 'g2', 'g3'])).statusCode, 200);
  await h.collect(customEvent(acme, { messageId: 'q1', event: 'bogus' }));
  await h.collect(customEvent(acme, { messageId: 'q2', event: 'bogus' }));
  await h.compacted();
  const lists = ['events/types', 'events/samples', 'quarantine'];

  for (const list of lists) {
    for (const limit of ['0', '-1', '1e9', '1001', 'abc', '', '1.5', '0x10', '%00', '1&limit=2']) {
      const res = await h.admin('GET', `/admin/v1/orgs/acme/${list}?limit=${limit}`);
      t.equal(res.statusCode, 400, `${list} limit=${limit}`);
      t.equal(res.json().code, 'invalid_request', `${list} limit=${limit}`);
    }
  }

  const cursorOf = async (url: string) => {
    const res = await h.admin('GET', url);
    t.equal(res.statusCode, 200, url);
    return (res.json() as Page).nextCursor!;
  };
  const samples = await cursorOf('/admin/v1/orgs/acme/events/samples?limit=1');
  const quarantine = await cursorOf('/admin/v1/orgs/acme/quarantine?limit=1');
  const types = await cursorOf('/admin/v1/orgs/acme/events/types?limit=1');
  const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');
  const decoded = JSON.parse(Buffer.from(samples, 'base64url').toString()) as [number, string, string[], number];
  const edited = (change: (c: [number, string, unknown[], unknown]) => void) => {
    const copy = structuredClone(decoded) as [number, string, unknown[], unknown];
    change(copy);
    return b64(copy);
  };
  const refused: Array<[string, string]> = [
    ['garbage', 'not-a-cursor!'],
    ['empty', ''],
    ['huge', 'A'.repeat(10_000)],
    ['not JSON', b64('hello')],
    ['JSON of the wrong shape', b64({ key: 1 })],
    ['prototype keys', b64('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}')],
    ['an array with __proto__', b64('[1,"__proto__",["__proto__"],0]')],
    ['another org', await cursorOf('/admin/v1/orgs/globex/events/samples?limit=1')],
    ['another list', quarantine],
    ['the types list', types],
    ['a number for a timestamp key', edited((c) => (c[2][0] = 1))],
    ['text for a timestamp key', edited((c) => (c[2][0] = 'yesterday'))],
    ['a timestamp out of range', edited((c) => (c[2][0] = '9'.repeat(30)))],
    ['a key too long', edited((c) => (c[2][1] = 'x'.repeat(600)))],
    ['a key too short', edited((c) => c[2].pop())],
    ['negative ties', edited((c) => (c[3] = -1))],
    ['fractional ties', edited((c) => (c[3] = 0.5))],
    ['another version', edited((c) => (c[0] = 2))],
  ];
  for (const [why, cursor] of refused) {
    const res = await h.admin('GET', `/admin/v1/orgs/acme/events/samples?limit=1&cursor=${encodeURIComponent(cursor)}`);
    t.equal(res.statusCode, 400, why);
    t.equal(res.json().code, 'invalid_cursor', why);
    t.match(res.json().detail, /omit cursor/, `${why}: the detail says how to go on`);
  }
  t.equal(({} as Record<string, unknown>).polluted, undefined, 'nothing polluted');

  const withOtherFilter = await h.admin('GET', `/admin/v1/orgs/acme/events/samples?env=staging&cursor=${samples}`);
  t.equal(withOtherFilter.json().code, 'invalid_cursor', 'a cursor is for the filters it was made with');
  const onGlobex = await h.admin('GET', `/admin/v1/orgs/globex/events/samples?cursor=${samples}`);
  t.equal(onGlobex.json().code, 'invalid_cursor', "acme's cursor on globex");
  const twice = await h.admin('GET', `/admin/v1/orgs/acme/events/samples?cursor=${samples}&cursor=${samples}`);
  t.equal(twice.statusCode, 400, 'a repeated cursor');

  // A cursor edited into another valid position moves within acme's own rows, nowhere else.
  for (const key of [['0', '', ''], ['9'.repeat(18), 'zzzz', 'zzzz'], ['-' + '9'.repeat(17), 'g1', 'production']]) {
    const res = await h.admin('GET', `/admin/v1/orgs/acme/events/samples?cursor=${edited((c) => (c[2] = key))}`);
    t.equal(res.statusCode, 200, `key ${key.join(',')}`);
    for (const event of res.json().events as Array<{ messageId: string }>) t.match(event.messageId, /^a\d$/, 'only acme events');
  }
  const huge = await h.admin('GET', `/admin/v1/orgs/acme/quarantine?cursor=${b64(JSON.parse(Buffer.from(quarantine, 'base64url').toString()).map((part: unknown, i: number) => (i === 3 ? 1e15 : part)))}`);
  t.equal(huge.statusCode, 200, 'ties past the rows with that key: nothing more of them, no error');
});
