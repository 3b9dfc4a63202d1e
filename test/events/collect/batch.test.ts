/** POST /http/v1/batch: atomic, up to 2,500 events and 500 KB (SPEC 4.1). */
import t from 'tap';
import { startTestApp } from '../../helpers/app.js';

const member = (n: number, extra: Record<string, unknown> = {}) => ({
  clientId: `c${n}`,
  sentAt: Date.now(),
  type: 'track',
  event: 'product_view',
  properties: { productId: `p${n}` },
  traits: { email: `u${n}@example.com` },
  messageId: `b-${n}`,
  ...extra,
});

t.test('a valid batch is appended whole and answered with every messageId', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const batch = Array.from({ length: 50 }, (_, i) => member(i));
  delete (batch[0] as Record<string, unknown>).messageId;
  const res = await h.batch({ ...cred, context: { library: { name: 'sdk', version: '1' } }, batch });
  t.equal(res.statusCode, 200);
  const ids = res.json().messageIds as string[];
  t.equal(ids.length, 50);
  t.equal(ids[1], 'b-1');
  t.match(ids[0], /^[0-9a-f-]{36}$/, 'assigned when absent');
  await h.compacted();
  const rows = await h.db().all<{ n: bigint }>("SELECT count(*) AS n FROM events WHERE event_name = 'product_view'");
  t.equal(Number(rows[0]!.n), 50);
  const [one] = await h.db().all<{ raw: string }>("SELECT raw FROM events WHERE message_id = 'b-7'");
  t.equal(JSON.parse(one!.raw).context.library.name, 'sdk', 'batch context applies to members');
});

t.test('one invalid member rejects the whole batch; every member is quarantined', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const batch = [member(1), member(2, { properties: {} }), member(3)];
  const res = await h.batch({ ...cred, context: { debug: true }, batch });
  t.equal(res.statusCode, 412);
  t.same(res.json().errors, [{ path: '/batch/1/properties/productId', message: 'is required' }]);
  await h.compacted();
  t.same(await h.db().all('SELECT 1 FROM events'), [], 'nothing appended as an event');
  const q = (await h.admin('GET', '/admin/v1/orgs/acme/quarantine')).json().events as Array<{ code: string }>;
  t.same(q.map((e) => e.code).sort(), ['batch_rejected', 'batch_rejected', 'schema_violation']);
});

t.test('limits: 2,500 members, members without credentials, 32 KB per member, 500 KB per batch', async (t) => {
  const h = await startTestApp(t);
  const cred = (await h.createOrg('acme')).production;
  const tooMany = await h.batch({ ...cred, batch: Array.from({ length: 2501 }, (_, i) => ({ clientId: `${i}` })) });
  t.ok([412, 413].includes(tooMany.statusCode), `2,501 members refused (${tooMany.statusCode})`);
  const withCreds = await h.batch({ ...cred, context: { debug: true }, batch: [member(1, { partnerId: cred.partnerId })] });
  t.equal(withCreds.statusCode, 412);
  t.equal(withCreds.json().errors[0].path, '/batch/0/partnerId');
  const fat = await h.batch({ ...cred, batch: [member(1, { properties: { productId: 'p', blob: 'x'.repeat(33 * 1024) } })] });
  t.equal(fat.statusCode, 413);
  const huge = await h.batch({ ...cred, batch: Array.from({ length: 30 }, (_, i) => member(i, { properties: { productId: 'p', blob: 'x'.repeat(20 * 1024) } })) });
  t.equal(huge.statusCode, 413);
  t.equal(huge.json().code, 'payload_too_large');
  const wrong = await h.batch({ partnerId: cred.partnerId, partnerSecret: 'nope', batch: [member(1)] });
  t.equal(wrong.statusCode, 401);
});
