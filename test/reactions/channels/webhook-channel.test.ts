/** The webhook channel (SPEC 8) against a real HTTP receiver: signed JSON, retry classes, the retry loop. */
import t from 'tap';
import { Webhook } from 'standardwebhooks';
import { deliverWithRetries, type RetryPolicy } from '../../../src/reactions/channels/deliver-with-retries.js';
import type { Delivery } from '../../../src/reactions/channels/types.js';
import { WebhookChannel } from '../../../src/reactions/channels/webhook-channel.js';
import { webhookSecretFor } from '../../../src/reactions/channels/webhook-signing.js';
import { type Responder, startReceiver, status } from '../../helpers/http-receiver.js';
import { scaled } from '../../helpers/deadline.js';

const MASTER_KEY = 'test-master-key';
const policy: RetryPolicy = { maxAttempts: 4, baseDelayMs: 1000, maxDelayMs: 30_000 };

interface Tap {
  teardown(fn: () => unknown): void;
}

function delivery(url: string, sendId = 'snd_1'): Delivery {
  return {
    sendId,
    org: 'acme',
    flowId: '203850',
    variant: 'Variant A',
    email: 'ada@example.com',
    eventId: 'evt_1',
    message: { channel: 'webhook', url, body: { hello: 'world', nights: 6 } },
  };
}

/** Real time for the clock: Webhook#verify refuses timestamps more than 5 minutes from now. */
function channel(t: Tap, opts: { timeoutMs?: number } = {}): WebhookChannel {
  const ch = new WebhookChannel({
    allowPrivate: true,
    timeoutMs: opts.timeoutMs ?? 5000,
    secretFor: (org) => webhookSecretFor(MASTER_KEY, org),
    clock: { now: () => Date.now() },
  });
  t.teardown(() => ch.close());
  return ch;
}

async function receiver(t: Tap, script?: Responder[]) {
  const r = await startReceiver(script);
  t.teardown(() => r.close());
  return r;
}

/** Sleeps are recorded, not waited. */
function recordingDeps() {
  const sleeps: number[] = [];
  return { sleeps, deps: { sleep: async (ms: number) => void sleeps.push(ms), random: () => 1 } };
}

t.test('POSTs the JSON body with Standard Webhooks headers that verify with the org secret', async (t) => {
  const r = await receiver(t);
  const outcome = await channel(t).attempt(delivery(r.url));
  t.same(outcome, { kind: 'delivered', detail: 'HTTP 204' });

  const [got] = r.received;
  if (!got) return t.fail('receiver got nothing');
  t.equal(got.method, 'POST');
  t.equal(got.path, '/hook');
  t.equal(got.headers['content-type'], 'application/json');
  t.equal(got.headers['user-agent'], 'audience-webhooks/1');
  t.equal(got.headers['webhook-id'], 'snd_1');
  t.same(JSON.parse(got.body), { hello: 'world', nights: 6 });

  const headers = got.headers as Record<string, string>;
  const verified = new Webhook(webhookSecretFor(MASTER_KEY, 'acme')).verify(got.body, headers);
  t.same(verified, { hello: 'world', nights: 6 }, 'signature verifies with the org secret');
  const otherOrg = new Webhook(webhookSecretFor(MASTER_KEY, 'other-org'));
  t.throws(() => otherOrg.verify(got.body, headers), 'another org secret does not verify');
  const acme = new Webhook(webhookSecretFor(MASTER_KEY, 'acme'));
  t.throws(() => acme.verify(got.body + ' ', headers), 'a changed body does not verify');
});

t.test('500, 500, 200: delivered on the third attempt, same webhook-id every time', async (t) => {
  const r = await receiver(t, [status(500), status(500), status(200)]);
  const { sleeps, deps } = recordingDeps();
  const result = await deliverWithRetries(channel(t), delivery(r.url, 'snd_retry'), policy, deps);
  t.same(result, { kind: 'delivered', attempts: 3 });
  t.equal(r.received.length, 3);
  t.same(r.received.map((x) => x.headers['webhook-id']), ['snd_retry', 'snd_retry', 'snd_retry']);
  t.same(sleeps, [1000, 2000], 'backoff doubles between attempts');
});

t.test('400: failed after one attempt, no retry', async (t) => {
  const r = await receiver(t, [status(400)]);
  const { sleeps, deps } = recordingDeps();
  const result = await deliverWithRetries(channel(t), delivery(r.url), policy, deps);
  t.same(result, { kind: 'failed', attempts: 1, reason: 'HTTP 400' });
  t.equal(r.received.length, 1);
  t.same(sleeps, []);
});

t.test('3xx is final and not followed', async (t) => {
  const r = await receiver(t, [status(302, { location: 'http://169.254.169.254/latest' })]);
  t.same(await channel(t).attempt(delivery(r.url)), { kind: 'failed', reason: 'HTTP 302' });
  t.equal(r.received.length, 1);
});

t.test('always 503: dead-lettered after maxAttempts with the last reason', async (t) => {
  const r = await receiver(t, [status(503)]);
  const { deps } = recordingDeps();
  const seen: string[] = [];
  const result = await deliverWithRetries(channel(t), delivery(r.url), policy, {
    ...deps,
    onAttempt: (n, o) => seen.push(`${n}:${o.kind}`),
  });
  t.same(result, { kind: 'dead', attempts: 4, reason: 'HTTP 503' });
  t.equal(r.received.length, 4);
  t.same(seen, ['1:retry', '2:retry', '3:retry', '4:retry']);
});

t.test('429 with Retry-After: 2 waits at least 2 s before the next attempt', async (t) => {
  const r = await receiver(t, [status(429, { 'retry-after': '2' }), status(200)]);
  const sleeps: number[] = [];
  const deps = { sleep: async (ms: number) => void sleeps.push(ms), random: () => 0 };
  const result = await deliverWithRetries(channel(t), delivery(r.url), policy, deps);
  t.same(result, { kind: 'delivered', attempts: 2 });
  t.same(sleeps, [2000], 'random() = 0 alone would give 0 ms; Retry-After raises it to 2000');
});

t.test('a receiver that never answers: retry after the timeout', async (t) => {
  const r = await receiver(t, [() => {}]);
  const started = Date.now();
  const outcome = await channel(t, { timeoutMs: 200 }).attempt(delivery(r.url));
  t.match(outcome, { kind: 'retry', reason: /^network: TimeoutError/ });
  t.ok(Date.now() - started < scaled(3000), 'gave up at its deadline (the receiver never answers)');
  t.equal(r.received.length, 1);
});

t.test('a refused connection is retried', async (t) => {
  const r = await receiver(t);
  await r.close();
  const outcome = await channel(t).attempt(delivery(r.url));
  t.match(outcome, { kind: 'retry', reason: /ECONNREFUSED/ });
});
