/** openChannels: every channel from config, email only with SMTP_URL, the outbox under DATA_DIR. */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EmailChannel } from '../../../src/reactions/channels/email-channel.js';
import { openChannels } from '../../../src/reactions/channels/open-channels.js';
import { OutboxChannel } from '../../../src/reactions/channels/outbox-channel.js';
import { WebhookChannel } from '../../../src/reactions/channels/webhook-channel.js';

const base = { allowPrivate: false, timeoutMs: 1000, signingKey: 'k', clock: { now: () => 0 } };

t.test('without smtpUrl there is no email channel', async (t) => {
  const channels = openChannels({ ...base, dataDir: t.testdir() });
  t.teardown(() => channels.close());
  t.equal(channels.channelFor('email'), undefined);
  t.type(channels.channelFor('webhook'), WebhookChannel);
  t.type(channels.channelFor('outbox'), OutboxChannel);
});

t.test('with smtpUrl there is one; the outbox writes to DATA_DIR/outbox', async (t) => {
  const dataDir = t.testdir();
  const channels = openChannels({ ...base, dataDir, smtpUrl: 'smtp://127.0.0.1:1' });
  t.type(channels.channelFor('email'), EmailChannel);
  await channels.channelFor('outbox')?.attempt({
    sendId: 's1', org: 'acme', flowId: 'f', variant: null, email: 'a@b.c', eventId: 'e',
    message: { channel: 'outbox', content: { hi: 1 } },
  });
  t.match(readFileSync(join(dataDir, 'outbox', 'acme.jsonl'), 'utf8'), /"sendId":"s1"/);
  await channels.close();
});
