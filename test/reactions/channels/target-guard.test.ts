/** SSRF guard (SPEC 8): private, loopback and link-local targets refused unless allowed, at creation and at connect. */
import t from 'tap';
import { lookup } from 'node:dns/promises';
import { hostname } from 'node:os';
import { request } from 'undici';
import { checkWebhookUrl, createGuardedAgent, isForbiddenAddress } from '../../../src/reactions/channels/target-guard.js';
import type { Delivery } from '../../../src/reactions/channels/types.js';
import { WebhookChannel } from '../../../src/reactions/channels/webhook-channel.js';
import { startReceiver } from '../../helpers/http-receiver.js';

interface Tap {
  teardown(fn: () => unknown): void;
}

function delivery(url: string): Delivery {
  return {
    sendId: 'snd_ssrf',
    org: 'acme',
    flowId: 'f1',
    variant: null,
    email: 'ada@example.com',
    eventId: 'evt_1',
    message: { channel: 'webhook', url, body: { x: 1 } },
  };
}

function channel(t: Tap, allowPrivate: boolean): WebhookChannel {
  const secretFor = () => 'whsec_c2VjcmV0';
  const ch = new WebhookChannel({ allowPrivate, timeoutMs: 2000, secretFor, clock: { now: () => Date.now() } });
  t.teardown(() => ch.close());
  return ch;
}

t.test('isForbiddenAddress: every private, local and special range; public unicast passes', async (t) => {
  const forbidden = [
    '127.0.0.1', '127.255.0.9', '10.0.0.5', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254',
    '100.64.0.1', '0.0.0.0', '224.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'fc00::1', 'fd12:3456::1',
    'ff02::1', '::ffff:127.0.0.1', '::ffff:7f00:1', '::ffff:10.0.0.1', '::ffff:169.254.169.254', '::127.0.0.1',
    'not-an-ip',
  ];
  for (const ip of forbidden) t.ok(isForbiddenAddress(ip), `${ip} forbidden`);
  for (const ip of ['93.184.216.34', '8.8.8.8', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8']) {
    t.notOk(isForbiddenAddress(ip), `${ip} allowed`);
  }
});

t.test('private targets are refused by checkWebhookUrl and by attempt(): the receiver gets nothing', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  const refused = [
    `http://127.0.0.1:${r.port}/hook`,
    `http://localhost:${r.port}/hook`,
    `http://localhost.:${r.port}/hook`,
    `http://app.localhost:${r.port}/hook`,
    'http://10.0.0.5/hook',
    'http://169.254.169.254/latest',
    `http://[::1]:${r.port}/`,
    `http://[::ffff:127.0.0.1]:${r.port}/`,
    `http://2130706433:${r.port}/`, // 127.0.0.1 as one number; the URL parser normalises it
  ];
  const ch = channel(t, false);
  for (const url of refused) {
    t.match(checkWebhookUrl(url, false), /not allowed/, `${url} refused at creation`);
    t.match(await ch.attempt(delivery(url)), { kind: 'failed', reason: /^target refused/ }, `${url} refused at send`);
  }
  t.equal(r.received.length, 0);
});

t.test('a hostname that resolves to loopback is refused at connect time', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  // `localhost` comes from /etc/hosts (or the resolver): the name alone says nothing, its address does.
  const agent = createGuardedAgent({ allowPrivate: false, connectTimeoutMs: 2000 });
  t.teardown(() => agent.close());
  await t.rejects(request(`http://localhost:${r.port}/hook`, { dispatcher: agent }), { code: 'ERR_FORBIDDEN_TARGET' });
  t.equal(r.received.length, 0);

  const open = createGuardedAgent({ allowPrivate: true, connectTimeoutMs: 2000 });
  t.teardown(() => open.close());
  const res = await request(`http://localhost:${r.port}/hook`, { dispatcher: open });
  await res.body.dump();
  t.equal(res.statusCode, 204, 'the same name connects when private targets are allowed');
});

t.test('attempt() to a name resolving to a private address fails for good, without retry', async (t) => {
  // The machine's own name usually resolves (via /etc/hosts) to loopback or a private address.
  const name = hostname();
  const address = await lookup(name).then((a) => a.address, () => undefined);
  if (!address || !isForbiddenAddress(address)) {
    t.comment(`skipped: ${name} resolves to ${address ?? 'nothing'}`);
    return;
  }
  const r = await startReceiver();
  t.teardown(() => r.close());
  const url = `http://${name}:${r.port}/hook`;
  t.equal(checkWebhookUrl(url, false), null, 'the name passes the creation check');
  t.match(await channel(t, false).attempt(delivery(url)), { kind: 'failed', reason: /resolves to forbidden address/ });
  t.equal(r.received.length, 0);
});

t.test('with allowPrivate the local receiver gets the webhook', async (t) => {
  const r = await startReceiver();
  t.teardown(() => r.close());
  t.equal(checkWebhookUrl(r.url, true), null);
  t.same(await channel(t, true).attempt(delivery(r.url)), { kind: 'delivered', detail: 'HTTP 204' });
  t.equal(r.received.length, 1);
});

t.test('only http(s), no credentials, whatever allowPrivate says', async (t) => {
  for (const allowPrivate of [false, true]) {
    t.match(checkWebhookUrl('ftp://example.com/x', allowPrivate), /only http and https/);
    t.match(checkWebhookUrl('file:///etc/passwd', allowPrivate), /only http and https/);
    t.match(checkWebhookUrl('https://user:pw@example.com/x', allowPrivate), /credentials/);
    t.match(checkWebhookUrl('https://user@example.com/x', allowPrivate), /credentials/);
    t.match(checkWebhookUrl('not a url', allowPrivate), /not a valid URL/);
  }
  t.equal(checkWebhookUrl('https://hooks.example.com/in?x=1', false), null);
  t.match(await channel(t, true).attempt(delivery('ftp://127.0.0.1/x')), { kind: 'failed', reason: /only http/ });
});

// Teredo: 2001:0:<server IPv4>:<flags>:<port>:<client IPv4 XOR ffff:ffff>. 65.54.227.120 is a public server.
const TEREDO_CLIENT_LOOPBACK = '2001:0:4136:e378:8000:63bf:80ff:fffe'; // client 127.0.0.1
const TEREDO_CLIENT_METADATA = '2001:0:4136:e378:8000:63bf:5601:5601'; // client 169.254.169.254
const TEREDO_SERVER_PRIVATE = '2001:0:a00:1:8000:63bf:f7f7:f7f7'; // server 10.0.0.1, client 8.8.8.8
const TEREDO_PUBLIC = '2001:0:4136:e378:8000:63bf:f7f7:f7f7'; // server 65.54.227.120, client 8.8.8.8

t.test('IPv4 embedded by NAT64, 6to4, Teredo, mapped and compatible forms is judged like the IPv4 itself', async (t) => {
  const refused = [
    '64:ff9b::a9fe:a9fe', // NAT64 of 169.254.169.254
    '64:ff9b::169.254.169.254',
    '64:ff9b::7f00:1', // NAT64 of 127.0.0.1
    '64:ff9b::a00:5', // 10.0.0.5
    '64:ff9b::6440:1', // 100.64.0.1 (CGNAT)
    '64:ff9b::', // 0.0.0.0
    '64:ff9b:1::7f00:1', // local-use NAT64 prefix, IPv4 last
    '64:ff9b:1:abcd::a9fe:a9fe',
    '64:ff9b:1:7f00:1::', // local-use /48 in the RFC 6052 layout: 127.0.0.1 around the u octet
    '64:ff9b:1:a9fe:a9:fe00::', // 169.254.169.254 in the same layout
    '2002:7f00:1::', // 6to4 of 127.0.0.1
    '2002:7f00:1::1',
    '2002:a9fe:a9fe::1', // 6to4 of 169.254.169.254
    '2002:c0a8:101:1::1', // 192.168.1.1
    TEREDO_CLIENT_LOOPBACK,
    TEREDO_CLIENT_METADATA,
    TEREDO_SERVER_PRIVATE,
    '::ffff:7f00:1',
    '::ffff:a9fe:a9fe',
    '::127.0.0.1',
    '::a9fe:a9fe',
  ];
  for (const ip of refused) {
    t.ok(isForbiddenAddress(ip), `${ip} forbidden (the connect-time check)`);
    t.match(checkWebhookUrl(`http://[${ip}]/hook`, false), /not allowed/, `http://[${ip}]/ refused at creation`);
    t.equal(checkWebhookUrl(`http://[${ip}]/hook`, true), null, `http://[${ip}]/ allowed with allowPrivate`);
  }
  // Public IPv4 behind a transition mechanism stays reachable: DNS64 answers 64:ff9b::<IPv4> on IPv6-only hosts.
  const allowed = ['64:ff9b::808:808', '64:ff9b::5db8:d822', '64:ff9b:1::808:808', '64:ff9b:1:808:8:800::', '2002:808:808::1', TEREDO_PUBLIC, '::ffff:808:808'];
  for (const ip of allowed) {
    t.notOk(isForbiddenAddress(ip), `${ip} allowed`);
    t.equal(checkWebhookUrl(`http://[${ip}]/hook`, false), null, `http://[${ip}]/ allowed`);
  }
});

t.test('a NAT64 form of loopback is refused by attempt() before any connection', async (t) => {
  const ch = channel(t, false);
  for (const url of ['http://[64:ff9b::a9fe:a9fe]/latest/meta-data/', 'http://[64:ff9b::7f00:1]/', 'http://[2002:7f00:1::]/', `http://[${TEREDO_CLIENT_LOOPBACK}]/`]) {
    t.match(await ch.attempt(delivery(url)), { kind: 'failed', reason: /^target refused: private or reserved address/ }, url);
  }
});
