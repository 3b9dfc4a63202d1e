/**
 * Standard Webhooks signatures (https://www.standardwebhooks.com/) with one secret per org.
 * Each org's secret is derived from a single master key, so nothing per org is stored, and an org that
 * knows its own secret cannot compute (or forge) another org's.
 */
import { createHmac } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Webhook } from 'standardwebhooks';

export interface SigningHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** 'whsec_' + base64 is the secret format Standard Webhooks libraries accept as is. */
export function webhookSecretFor(masterKey: string, org: string): string {
  return 'whsec_' + createHmac('sha256', masterKey).update('audience-webhook:' + org).digest('base64');
}

export function signingHeaders(secret: string, sendId: string, timestampSeconds: number, body: string): SigningHeaders {
  const signature = new Webhook(secret).sign(sendId, new Date(timestampSeconds * 1000), body);
  return { 'webhook-id': sendId, 'webhook-timestamp': String(timestampSeconds), 'webhook-signature': signature };
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
