/**
 * The quarantine alert (issue 42): a real HTTP receiver gets one webhook, signed with the org's webhook
 * secret (checked with the standardwebhooks package), within a minute of an event name's quarantined share
 * crossing the threshold, with the counts and the top reasons; once per crossing; another org's events
 * neither count nor alert; a URL the webhook guard refuses is refused at PUT.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import t from 'tap';
import { customEvent, startTestApp, waitFor } from '../../helpers/app.js';

t.test('one signed webhook per crossing, with the counts and the top reasons', async (t) => {
  const received: Array<{ headers: Record<string, string>; body: string }> = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers as Record<string, string>, body });
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const receiver = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

  const h = await startTestApp(t);
  const acme = (await h.createOrg('acme')).production;
  const beta = (await h.createOrg('beta')).production;
  for (const url of ['file:///etc/passwd', 'ftp://example.com/x', 'not a url']) {
    t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/alerts/quarantine', { url, threshold: 0.2, minEvents: 10, windowSeconds: 300 })).statusCode, 400, `${url} refused`);
  }
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/alerts/quarantine')).json().code, 'not_found');
  const alert = { url: receiver, threshold: 0.2, minEvents: 10, windowSeconds: 300 };
  t.same((await h.admin('PUT', '/admin/v1/orgs/acme/alerts/quarantine', alert)).json(), { alert });
  t.same((await h.admin('GET', '/admin/v1/orgs/acme/alerts/quarantine')).json(), { alert });

  // Beta's partner sends nothing but invalid events: beta has no alert, and they are not acme's.
  for (let i = 0; i < 20; i++) t.equal((await h.collect(customEvent(beta, { messageId: `beta-${i}`, sentAt: 12 }))).statusCode, 412);
  for (let i = 0; i < 10; i++) t.equal((await h.collect(customEvent(acme, { messageId: `ok-${i}` }))).statusCode, 200);
  await h.compacted();
  // Below the threshold: no alert (two checks go by).
  await new Promise((r) => setTimeout(r, 16_000));
  t.same(received, [], 'none while no name is over the threshold');
  for (let i = 0; i < 5; i++) t.equal((await h.collect(customEvent(acme, { messageId: `bad-${i}`, sentAt: 12 }))).statusCode, 412);
  await h.compacted();
  await waitFor(() => received.length > 0 || undefined, { what: 'the alert', timeoutMs: 60_000 });
  const secret = (await h.admin('GET', '/admin/v1/orgs/acme/webhook-secret')).json().secret as string;
  const body = new Webhook(secret).verify(received[0]!.body, received[0]!.headers) as Record<string, unknown>;
  t.match(body, { type: 'quarantine.share_crossed', org: 'acme', environment: 'production', eventName: 'custom_booking_completed', events: 15, quarantined: 5, accepted: 10, threshold: 0.2, windowSeconds: 300 });
  t.equal(body.share, 0.3333);
  t.match((body.topReasons as Array<{ reason: string; count: number }>)[0], { reason: /^schema_violation \/sentAt must be epoch milliseconds/, count: 5 });
  // Still over: no second webhook.
  await new Promise((r) => setTimeout(r, 16_000));
  t.equal(received.length, 1, 'once per crossing');
  t.same((await h.admin('DELETE', '/admin/v1/orgs/acme/alerts/quarantine')).json(), { deleted: true });
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme/alerts/quarantine')).json().code, 'not_found');
});
