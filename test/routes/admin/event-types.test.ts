/**
 * GET …/events/types whatever partners send: 20,000 event types (megabytes in one answer) come a page
 * at a time, an event type with 10,000 property keys lists 100 and says it was truncated, prototype
 * names are plain names, and new types arriving while a client pages never make it repeat or skip one.
 * Each answer is the same before and after the compactor folds the events into event_types (reopening
 * folds everything).
 */
import t, { type Test } from 'tap';
import { customEvent, startTestApp, type OrgCredentials, type TestApp } from '../../helpers/app.js';
import { pageAll } from '../../helpers/paging.js';

type Cred = OrgCredentials['production'];
type EventType = { eventType: string; environment: string; count: number; lastSeenAt: string; properties: Record<string, string>; propertiesTruncated: boolean };

/** Custom events named `names`, in batches of 2,500 (each well under the 500 KB of a batch). */
async function sendTypes(t: Test, h: TestApp, cred: Cred, names: string[], properties: Record<string, unknown> = {}) {
  for (let start = 0; start < names.length; start += 2500) {
    const batch = names.slice(start, start + 2500).map((eventName) => ({
      clientId: 'c',
      sentAt: Date.now(),
      type: 'track',
      event: 'custom',
      properties: { eventName, requiresIdentity: false, properties },
    }));
    const res = await h.batch({ ...cred, batch });
    if (res.statusCode !== 200) t.fail(`batch: ${res.statusCode} ${res.body}`);
  }
}

/** The same DATA_DIR after a restart: opening the org's database folds every event into event_types. */
async function reopened(t: Test, h: TestApp): Promise<TestApp> {
  await h.close();
  return startTestApp(t, { dataDir: h.dataDir });
}

/** Enough types for 20 full pages of the largest limit (1,000) and megabytes unpaged. */
const MANY = 20_000;

const names = (n: number) => Array.from({ length: n }, (_, i) => `t${String(i).padStart(6, '0')}`);

t.test('20,000 event types: bounded pages, each type once, in order; the same once folded', async (t) => {
  let h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  await sendTypes(t, h, cred, names(MANY));
  await h.compacted();

  const first = await h.admin('GET', '/admin/v1/orgs/acme/events/types');
  t.equal(first.statusCode, 200);
  t.equal(first.json().types.length, 100, '100 types by default');
  t.type(first.json().nextCursor, 'string');
  t.ok(first.body.length < 20_000, `the first page is ${first.body.length} bytes`);
  const biggest = await h.admin('GET', '/admin/v1/orgs/acme/events/types?limit=1000');
  t.equal(biggest.json().types.length, 1000);
  t.ok(biggest.body.length < 512 * 1024, `a page of 1,000 is ${biggest.body.length} bytes`);

  const walk = async (app: TestApp) => {
    const { items } = await pageAll(t, app, '/admin/v1/orgs/acme/events/types?env=production', 'types', 1000);
    return items as EventType[];
  };
  const unfolded = await walk(h);
  t.equal(unfolded.length, MANY);
  t.same(unfolded.map((x) => x.eventType), names(MANY).map((n) => `custom_${n}`), 'every type once, by name');
  t.ok(unfolded.every((x) => x.count === 1 && x.environment === 'production'));

  h = await reopened(t, h);
  const folded = await walk(h);
  t.same(folded, unfolded, 'the same answers from the folded rows');
});

t.test('10,000 property keys on one type: 100 listed, truncated said; long keys are not listed', async (t) => {
  let h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  // 20 events of 500 distinct keys each (an event is at most 32 KB).
  for (let e = 0; e < 20; e++) {
    const properties = Object.fromEntries(Array.from({ length: 500 }, (_, k) => [`k${String(e * 500 + k).padStart(5, '0')}`, k]));
    const res = await h.collect(customEvent(cred, { properties: { eventName: 'wide', properties } }));
    t.equal(res.statusCode, 200, res.body);
  }
  await h.collect(customEvent(cred, { properties: { eventName: 'long_key', properties: { ['x'.repeat(200)]: 1, short: 'ok' } } }));
  await h.collect(customEvent(cred, { properties: { eventName: 'narrow', properties: { a: 1, b: null } } }));
  await h.collect(customEvent(cred, { properties: { eventName: 'narrow', properties: { a: 'one' } } }));
  await h.compacted();

  const check = async (app: TestApp, when: string) => {
    const res = await app.admin('GET', '/admin/v1/orgs/acme/events/types?env=production');
    t.equal(res.statusCode, 200, when);
    t.ok(res.body.length < 10_000, `${when}: ${res.body.length} bytes`);
    const types = new Map((res.json().types as EventType[]).map((x) => [x.eventType, x]));
    const wide = types.get('custom_wide')!;
    t.equal(Object.keys(wide.properties).length, 100, `${when}: 100 keys listed`);
    t.equal(wide.propertiesTruncated, true, `${when}: truncated`);
    t.equal(wide.count, 20, `${when}: every event counted`);
    t.same(types.get('custom_long_key')!.properties, { short: 'string' }, `${when}: the 200-character key is not listed`);
    t.equal(types.get('custom_long_key')!.propertiesTruncated, true, `${when}: and the type says so`);
    t.same(types.get('custom_narrow'), { ...types.get('custom_narrow'), count: 2, properties: { a: 'integer|string', b: 'null' }, propertiesTruncated: false }, `${when}: types of a key joined`);
  };
  await check(h, 'not folded yet');
  h = await reopened(t, h);
  await check(h, 'folded');
});

t.test('prototype names are plain event types and keys, folded or not', async (t) => {
  let h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  await sendTypes(t, h, cred, ['__proto__', 'constructor', 'toString', 'hasOwnProperty'], { constructor: 1, toString: 'x', valueOf: null });
  // __proto__ as a property key only arrives through the log (the collector's JSON parser refuses it).
  const body = JSON.stringify(customEvent(cred, { messageId: 'p1', partnerSecret: undefined, properties: { eventName: 'proto_keys', properties: { city: 'x' } } })).replace(
    '"properties":{"city"',
    '"properties":{"__proto__":{"polluted":"yes"},"city"',
  );
  await h.app.committer!.commitEntries([{ kind: 'event', org: 'acme', environment: 'production', messageId: 'p1', receivedAt: Date.now(), body, code: null, errors: null, facts: null }]);
  await h.compacted();

  const check = async (app: TestApp, when: string) => {
    const res = await app.admin('GET', '/admin/v1/orgs/acme/events/types');
    t.equal(res.statusCode, 200, when);
    const types = JSON.parse(res.body).types as EventType[];
    t.same(types.map((x) => x.eventType), ['custom___proto__', 'custom_constructor', 'custom_hasOwnProperty', 'custom_proto_keys', 'custom_toString'], `${when}: by name`);
    t.same(JSON.stringify(types[0]!.properties), '{"constructor":"integer","toString":"string","valueOf":"null"}', when);
    const proto = types.find((x) => x.eventType === 'custom_proto_keys')!.properties;
    t.ok(Object.hasOwn(proto, '__proto__'), `${when}: __proto__ is an own key`);
    t.equal(JSON.stringify(proto), '{"__proto__":"object","city":"string"}', when);
    t.equal(({} as Record<string, unknown>).polluted, undefined, `${when}: nothing polluted`);
  };
  await check(h, 'not folded yet');
  h = await reopened(t, h);
  await check(h, 'folded');
});

t.test('types arriving while a client pages: each type that was there once, in order', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const before = names(50).filter((_, i) => i % 2 === 0);
  await sendTypes(t, h, cred, before);
  await h.compacted();
  let round = 0;
  const { items } = await pageAll(t, h, '/admin/v1/orgs/acme/events/types', 'types', 4, async () => {
    // Names before, between and after the ones being paged, and more events of a known type.
    await sendTypes(t, h, cred, [`a${round}`, `t${String(round * 4 + 1).padStart(6, '0')}`, `z${round}`, before[0]!]);
    round++;
    await h.compacted();
  });
  const seen = (items as EventType[]).map((x) => x.eventType);
  t.equal(new Set(seen).size, seen.length, 'no type twice');
  for (const name of before) t.ok(seen.includes(`custom_${name}`), `custom_${name} seen`);
  t.same(seen, [...seen].sort(), 'in order');
});
