/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/) with one secret per org.
 * Each org's secret is derived from a single master key, so nothing per org is stored, and an org that
 * knows its own secret cannot compute (or forge) another org's.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

export interface SigningHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

const SECRET_PREFIX = 'whsec_';

/** 'whsec_' + base64 is the secret format Standard Webhooks libraries accept as is. */
export function webhookSecretFor(masterKey: string, org: string): string {
  return SECRET_PREFIX + createHmac('sha256', masterKey).update('audience-webhook:' + org).digest('base64');
}

/**
 * `v1,<base64 HMAC-SHA256 of "id.timestamp.body" keyed by the secret's bytes>`, as the spec defines it.
 * Computed with node:crypto rather than the standardwebhooks package's sign(): that one hashes in pure JS
 * and was a sixth of the CPU of a send in the benchmark. The tests verify with the package's verify().
 */
export function signingHeaders(secret: string, sendId: string, timestampSeconds: number, body: string): SigningHeaders {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const mac = createHmac('sha256', key).update(`${sendId}.${timestampSeconds}.${body}`).digest('base64');
  return { 'webhook-id': sendId, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': `v1,${mac}` };
}

/**
 * The master key: the configured one, else DATA_DIR/webhook.key, generated on first start (mode 0600;
 * 'wx' so two starts racing cannot overwrite each other's key). It must survive restarts, or every
 * receiver's stored secret would stop verifying.
 */
export function resolveWebhookSigningKey(
  configured: string | undefined,
  dataDir: string,
  randomBytes: (size: number) => Buffer,
): string {
  if (configured) return configured;
  const file = resolve(join(dataDir, 'webhook.key'));
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(dataDir, { recursive: true });
  const key = randomBytes(32).toString('base64url');
  writeFileSync(file, key + '\n', { mode: 0o600, flag: 'wx' });
  return key;
}
