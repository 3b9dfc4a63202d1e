/** Builds the channels the flow runner sends through, from config; one close for all of them. */
import { join } from 'node:path';
import type { Clock } from '../../core/context.js';
import { assertNever } from '../../core/domain.js';
import { EmailChannel } from './email-channel.js';
import { OutboxChannel } from './outbox-channel.js';
import type { Channel, ChannelName } from './types.js';
import { WebhookChannel } from './webhook-channel.js';
import { webhookSecretFor } from './webhook-signing.js';

export interface ChannelsOptions {
  dataDir: string;
  /** Without it channelFor('email') is undefined: there is no mail server to send through. */
  smtpUrl?: string;
  allowPrivate: boolean;
  timeoutMs: number;
  /** Master key the per-org webhook secrets derive from (resolveWebhookSigningKey). */
  signingKey: string;
  clock: Clock;
}

export interface Channels {
  channelFor(name: ChannelName): Channel | undefined;
  /** What the channels keep of an erased contact goes: the outbox file's lines (a webhook or an e-mail leaves nothing here). */
  eraseContact(org: string, email: string): Promise<number>;
  close(): Promise<void>;
}

export function openChannels(opts: ChannelsOptions): Channels {
  // Derived once per org: an HMAC per send is measurable at thousands of sends per second.
  const secrets = new Map<string, string>();
  const webhook = new WebhookChannel({
    allowPrivate: opts.allowPrivate,
    timeoutMs: opts.timeoutMs,
    secretFor: (org) => secrets.get(org) ?? secrets.set(org, webhookSecretFor(opts.signingKey, org)).get(org)!,
    clock: opts.clock,
  });
  const email = opts.smtpUrl ? new EmailChannel({ smtpUrl: opts.smtpUrl }) : undefined;
  const outbox = new OutboxChannel({ dir: join(opts.dataDir, 'outbox') });
  return {
    channelFor(name) {
      switch (name) {
        case 'webhook':
          return webhook;
        case 'email':
          return email;
        case 'outbox':
          return outbox;
        default:
          return assertNever(name);
      }
    },
    eraseContact: (org, email) => outbox.eraseContact(org, email),
    async close() {
      await Promise.all([webhook.close(), email?.close()]);
    },
  };
}
