/**
 * The outbox channel (SPEC 8): one JSON line per message in <dir>/<org>.jsonl, never two for one sendId;
 * an erasure takes a contact's lines out without losing an append queued beside it.
 */
import fc from 'fast-check';
import t from 'tap';
import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { OutboxChannel } from '../../../src/reactions/channels/outbox-channel.js';
import type { Delivery } from '../../../src/reactions/channels/types.js';

function delivery(sendId: string, org = 'acme', email = 'ada@example.com'): Delivery {
  return {
    sendId,
    org,
    flowId: '203850',
    variant: 'Variant B',
    email,
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

t.test("an erasure takes out every line of the contact, and no append queued before or after it is lost", async (t) => {
  const contacts = ['ada.lovelace+news@example.com', 'bob@example.com', 'carol.7@mail.example.org'];
  let run = 0;
  await fc.assert(
    fc.asyncProperty(
      // Sends in the order they are queued (contact, how many lines were in the file before), and where the erasure is queued.
      fc.array(fc.integer({ min: 0, max: contacts.length - 1 }), { minLength: 1, maxLength: 40 }),
      fc.nat(),
      fc.boolean(),
      async (who, at, preload) => {
        const dir = join(t.testdir(), `run-${run++}`);
        const erasedAt = at % (who.length + 1);
        if (preload) await new OutboxChannel({ dir }).attempt(delivery('old', 'acme', contacts[0]!));
        const outbox = new OutboxChannel({ dir });
        const queued: Array<Promise<unknown>> = [];
        let erased: Promise<number> | undefined;
        who.forEach((c, i) => {
          // Written as the service stores it (normalised); asked for as a request names it (any case).
          if (i === erasedAt) erased = outbox.eraseContact('acme', contacts[0]!.toUpperCase());
          queued.push(outbox.attempt(delivery(`snd_${i}`, 'acme', contacts[c]!)));
        });
        erased ??= outbox.eraseContact('acme', contacts[0]!.toUpperCase());
        await Promise.all(queued);
        const removed = await erased;
        const expected = who.flatMap((c, i) => (c === 0 && i < erasedAt ? [] : [`snd_${i}`]));
        const file = join(dir, 'acme.jsonl');
        const got = existsSync(file) ? lines(file).map((l) => (l as { sendId: string }).sendId) : [];
        t.same(got, expected, 'every other line once, in order; none of the erased contact queued before the erasure');
        t.equal(removed, who.filter((c, i) => c === 0 && i < erasedAt).length + (preload ? 1 : 0), 'the count of lines taken out');
        t.notOk(existsSync(`${file}.tmp`), 'no temporary file left');
        // A new process reads the rewritten file whole: a kept send is known there.
        if (expected[0]) t.same(await new OutboxChannel({ dir }).attempt(delivery(expected[0])), { kind: 'delivered', detail: 'already in outbox' });
      },
    ),
    { numRuns: 60 },
  );
});

t.test('an erasure of a contact with no line, of a file that does not exist, or under a bad name changes nothing', async (t) => {
  const dir = t.testdir();
  const outbox = new OutboxChannel({ dir });
  t.equal(await outbox.eraseContact('acme', 'ada@example.com'), 0, 'no file');
  await outbox.attempt(delivery('snd_1', 'acme', 'bob@example.com'));
  const before = readFileSync(join(dir, 'acme.jsonl'), 'utf8');
  t.equal(await outbox.eraseContact('acme', 'ada@example.com'), 0);
  t.equal(await outbox.eraseContact('../acme', 'bob@example.com'), 0, 'a name that is not a slug names no file');
  t.equal(readFileSync(join(dir, 'acme.jsonl'), 'utf8'), before, 'the file is unchanged');
});

t.test('a torn last line and a temporary file left by a crash do not survive an erasure', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'acme.jsonl');
  await new OutboxChannel({ dir }).attempt(delivery('snd_1'));
  await new OutboxChannel({ dir }).attempt(delivery('snd_2', 'acme', 'bob@example.com'));
  appendFileSync(file, '{"sendId":"snd_3","email":"ada@exa');
  // A crash between writing the new file and renaming it: the old file is whole, the temporary one is overwritten.
  writeFileSync(`${file}.tmp`, '{"sendId":"snd_1","email":"ada@example.com"}\n'.repeat(3));
  t.equal(await new OutboxChannel({ dir }).eraseContact('acme', 'ada@example.com'), 1);
  t.same(lines(file).map((l) => (l as { sendId: string }).sendId), ['snd_2']);
  t.notOk(readFileSync(file, 'utf8').includes('ada@'), 'no trace of the address');
  t.notOk(existsSync(`${file}.tmp`));
});
