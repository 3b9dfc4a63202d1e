/**
 * A flow's sends and decisions, and a trigger's versions, come a page at a time: every row once while
 * new runs add rows, identical decisions (a trigger returning a row several times) each once, and a
 * cursor works only for the list, flow and filters it came from.
 */
import t from 'tap';
import { customEvent, startTestApp, type OrgCredentials, type TestApp } from '../../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../../helpers/flows.js';
import { pageAll } from '../../helpers/paging.js';

const OUTBOX = { channel: 'outbox', template: { text: 'hi' } };

async function book(h: TestApp, cred: OrgCredentials, from: number, count: number) {
  const batch = Array.from({ length: count }, (_, i) => ({
    ...customEvent(cred.production, { messageId: `b-${from + i}`, clientId: `c-${from + i}`, traits: { email: `p${from + i}@example.com` } }),
    partnerId: undefined,
    partnerSecret: undefined,
  }));
  const res = await h.batch({ ...cred.production, batch });
  if (res.statusCode !== 200) throw new Error(`batch: ${res.body}`);
}

t.test('sends and decisions: every row once while runs add more; filters and flows keep their cursors', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await startFlow(h, { id: 'f1', message: OUTBOX, scheduleSeconds: 3600, realTime: false });
  await startFlow(h, { id: 'f2', message: OUTBOX, scheduleSeconds: 3600, realTime: false });
  await book(h, cred, 0, 45);
  await runFlow(h, 'f1');
  await runFlow(h, 'f2');

  let next = 1000;
  const moreRuns = async () => {
    await book(h, cred, next, 3);
    next += 3;
    await runFlow(h, 'f1');
  };
  const sends = await pageAll(t, h, '/admin/v1/orgs/acme/flows/f1/sends', 'sends', 7, moreRuns);
  const sendIds = sends.items.map((s) => s.sendId as string);
  t.equal(sendIds.length, 45, 'the 45 sends there when paging began');
  t.equal(new Set(sendIds).size, 45, 'each once');
  t.ok(sends.items.every((s) => /^p\d+@example.com$/.test(s.email as string) && Number((s.email as string).slice(1, -12)) < 45), 'none that came later');

  const decisions = await pageAll(t, h, '/admin/v1/orgs/acme/flows/f1/decisions', 'decisions', 7, moreRuns);
  t.equal(decisions.items.length, 45 + 3 * sends.pages, 'every decision there when paging began');
  t.equal(new Set(decisions.items.map((d) => d.eventId)).size, decisions.items.length, 'each once');
  t.match(decisions.items[0], { outcome: 'sent', deliveryStatus: 'delivered', identityType: 'email' }, 'with its delivery');

  const one = await pageAll(t, h, '/admin/v1/orgs/acme/flows/f1/decisions?identity=email:p7@example.com', 'decisions', 1);
  t.same(one.items.map((d) => d.eventId), ['b-7'], "one contact's decisions");

  const cursorOf = async (url: string) => (await h.admin('GET', url)).json().nextCursor as string;
  const f1Sends = await cursorOf('/admin/v1/orgs/acme/flows/f1/sends?limit=2');
  const delivered = await cursorOf('/admin/v1/orgs/acme/flows/f1/sends?limit=2&status=delivered');
  const f1Decisions = await cursorOf('/admin/v1/orgs/acme/flows/f1/decisions?limit=2');
  const refused: Array<[string, string]> = [
    ['f1 sends cursor on f2', `/admin/v1/orgs/acme/flows/f2/sends?cursor=${f1Sends}`],
    ['sends cursor on decisions', `/admin/v1/orgs/acme/flows/f1/decisions?cursor=${f1Sends}`],
    ['decisions cursor on sends', `/admin/v1/orgs/acme/flows/f1/sends?cursor=${f1Decisions}`],
    ['a status filter dropped', `/admin/v1/orgs/acme/flows/f1/sends?cursor=${delivered}`],
    ['a status filter added', `/admin/v1/orgs/acme/flows/f1/sends?status=dead&cursor=${f1Sends}`],
    ['garbage', '/admin/v1/orgs/acme/flows/f1/sends?cursor=%E2%9C%93'],
  ];
  for (const [why, url] of refused) {
    const res = await h.admin('GET', url);
    t.equal(res.statusCode, 400, why);
    t.equal(res.json().code, 'invalid_cursor', why);
  }
  for (const limit of ['0', '-1', '1e9', '1001', 'abc', '']) {
    for (const list of ['sends', 'decisions']) {
      const res = await h.admin('GET', `/admin/v1/orgs/acme/flows/f1/${list}?limit=${limit}`);
      t.equal(res.statusCode, 400, `${list} limit=${limit}`);
      t.equal(res.json().code, 'invalid_request', `${list} limit=${limit}`);
    }
  }
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/sends?limit=1000')).json().nextCursor, null, 'the last page says so');
});

t.test('identical decisions (a trigger giving each row three times) are each given once', async (t) => {
  const h = await startTestApp(t);
  const cred = await h.createOrg('acme');
  const base = BOOKING_TRIGGER.replace(/;?\s*$/, '');
  await putQuery(h, 'triggers', 'booking_completed', `${base}\nUNION ALL ${base}\nUNION ALL ${base}`);
  await startFlow(h, { id: 'f1', message: OUTBOX, scheduleSeconds: 3600, realTime: false });
  await book(h, cred, 0, 10);
  await runFlow(h, 'f1');
  const all = (await h.admin('GET', '/admin/v1/orgs/acme/flows/f1/decisions?limit=1000')).json().decisions as Array<Record<string, unknown>>;
  t.equal(all.length, 30, 'three decisions per event');
  t.equal(all.filter((d) => d.outcome === 'duplicate').length, 20, 'two of them identical duplicates');
  const canon = (list: Array<Record<string, unknown>>) => list.map((d) => JSON.stringify(d)).sort();
  for (const limit of [1, 2, 4, 7]) {
    const paged = await pageAll(t, h, '/admin/v1/orgs/acme/flows/f1/decisions', 'decisions', limit);
    t.same(canon(paged.items), canon(all), `limit ${limit}: every decision once`);
  }
});

t.test('trigger versions: newest first, a page at a time', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  for (let v = 1; v <= 7; v++) await putQuery(h, 'triggers', 'booking_completed', `${BOOKING_TRIGGER} -- v${v}`);
  const { items, pages } = await pageAll(t, h, '/admin/v1/orgs/acme/triggers/booking_completed/versions', 'versions', 3);
  t.equal(pages, 3);
  t.same(items.map((v) => v.version), [7, 6, 5, 4, 3, 2, 1]);
  t.match(items[0], { status: 'valid', fired: { rows: 0, sent: 0 } });
  const bad = await h.admin('GET', '/admin/v1/orgs/acme/segments/booking_completed/versions?cursor=AAAA');
  t.equal(bad.json().code, 'invalid_cursor');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/triggers/nope/versions')).statusCode, 404);
});
