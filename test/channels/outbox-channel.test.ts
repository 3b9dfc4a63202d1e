/** The outbox channel (SPEC 8): one JSON line per message in <dir>/<org>.jsonl, never two for one sendId. */
import t from 'tap';
import { appendFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { OutboxChannel } from '../../src/reactions/channels/outbox-channel.js';
import type { Delivery } from '../../src/reactions/channels/types.js';

function delivery(sendId: string, org = 'acme'): Delivery {
  return {
    sendId,
    org,
    flowId: '203850',
    variant: 'Variant B',
    email: 'ada@example.com',
    eventId: 'evt_' + sendId,
    message: { channel: 'outbox', content: { subject: 'Hi Ada', body: 'Enjoy Lisbon' } },
  };
}

function lines(file: string): unknown[] {
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

t.test('one line per message with exactly the SPEC members, one file per org', async (t) => {
  const dir = join(t.testdir(), 'outbox');
  const outbox = new OutboxChannel({ dir });
  t.same(await outbox.attempt(delivery('snd_1')), { kind: 'delivered' });
  t.same(await outbox.attempt(delivery('snd_2')), { kind: 'delivered' });
  t.same(await outbox.attempt(delivery('snd_1', 'globex')), { kind: 'delivered' });

  const acme = lines(join(dir, 'acme.jsonl'));
  t.strictSame(acme[0], {
    sendId: 'snd_1',
    flowId: '203850',
    variant: 'Variant B',
    email: 'ada@example.com',
    eventId: 'evt_snd_1',
    channel: 'outbox',
    content: { subject: 'Hi Ada', body: 'Enjoy Lisbon' },
  });
  t.same(acme.map((l) => (l as { sendId: string }).sendId), ['snd_1', 'snd_2']);
  t.equal(lines(join(dir, 'globex.jsonl')).length, 1);
});

t.test('the same sendId never writes a second line, in this process or after a restart', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'acme.jsonl');
  const first = new OutboxChannel({ dir });
  await first.attempt(delivery('snd_1'));
  t.same(await first.attempt(delivery('snd_1')), { kind: 'delivered', detail: 'already in outbox' });

  const restarted = new OutboxChannel({ dir });
  t.same(await restarted.attempt(delivery('snd_1')), { kind: 'delivered', detail: 'already in outbox' });
  await restarted.attempt(delivery('snd_2'));
  t.same(lines(file).map((l) => (l as { sendId: string }).sendId), ['snd_1', 'snd_2']);
});

t.test('concurrent attempts for one sendId write one line; different ones never interleave', async (t) => {
  const dir = t.testdir();
  const outbox = new OutboxChannel({ dir });
  const ids = ['a', 'b', 'a', 'c', 'b', 'a'];
  const outcomes = await Promise.all(ids.map((id) => outbox.attempt(delivery(id))));
  t.ok(outcomes.every((o) => o.kind === 'delivered'));
  t.same(lines(join(dir, 'acme.jsonl')).map((l) => (l as { sendId: string }).sendId), ['a', 'b', 'c']);
});

t.test('a line torn by a crash is cut off, not glued to the next one', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'acme.jsonl');
  await new OutboxChannel({ dir }).attempt(delivery('snd_1'));
  appendFileSync(file, '{"sendId":"snd_2","flo'); // the crash: never answered delivered
  await new OutboxChannel({ dir }).attempt(delivery('snd_2'));
  t.same(lines(file).map((l) => (l as { sendId: string }).sendId), ['snd_1', 'snd_2']);
});

t.test('a non-outbox message or an org that is not a slug is refused', async (t) => {
  const outbox = new OutboxChannel({ dir: t.testdir() });
  const email: Delivery = { ...delivery('x'), message: { channel: 'email', subject: 's', text: 't' } };
  t.match(await outbox.attempt(email), { kind: 'failed' });
  t.match(await outbox.attempt(delivery('x', '../etc')), { kind: 'failed', reason: /bad org slug/ });
});
