/** Per-org webhook secrets derived from one master key, and the master key's file (SPEC 8). */
import t from 'tap';
import { createHmac, randomBytes } from 'node:crypto';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { resolveWebhookSigningKey, signingHeaders, webhookSecretFor } from '../../../src/reactions/channels/webhook-signing.js';

t.test('the org secret is whsec_ + base64 HMAC-SHA256(master, "audience-webhook:" + org)', async (t) => {
  const expected = createHmac('sha256', 'master').update('audience-webhook:acme').digest('base64');
  t.equal(webhookSecretFor('master', 'acme'), 'whsec_' + expected);
  t.not(webhookSecretFor('master', 'acme'), webhookSecretFor('master', 'globex'), 'one secret per org');
  t.not(webhookSecretFor('master', 'acme'), webhookSecretFor('other-master', 'acme'), 'changes with the master key');
});

t.test('signingHeaders verify with the standardwebhooks library', async (t) => {
  const secret = webhookSecretFor('master', 'acme');
  const now = Math.floor(Date.now() / 1000);
  const headers = signingHeaders(secret, 'snd_1', now, '{"a":1}');
  t.equal(headers['webhook-id'], 'snd_1');
  t.equal(headers['webhook-timestamp'], String(now));
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]+=*$/);
  t.same(new Webhook(secret).verify('{"a":1}', { ...headers }), { a: 1 });
  const resigned = signingHeaders(secret, 'snd_2', now, '{"a":1}');
  t.not(resigned['webhook-signature'], headers['webhook-signature'], 'the id is signed');
});

t.test('signing key: the configured one, else generated once into DATA_DIR/webhook.key (0600)', async (t) => {
  const dir = t.testdir();
  t.equal(resolveWebhookSigningKey('configured', dir, randomBytes), 'configured');

  const generated = resolveWebhookSigningKey(undefined, dir, randomBytes);
  const file = join(dir, 'webhook.key');
  t.equal(readFileSync(file, 'utf8'), generated + '\n');
  t.equal(statSync(file).mode & 0o777, 0o600);
  t.ok(generated.length >= 40, 'from 32 random bytes');
  t.equal(resolveWebhookSigningKey(undefined, dir, randomBytes), generated, 'read back on the next start');
});
