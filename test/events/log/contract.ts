/**
 * The contract every log backend passes (embedded-log.test.ts, jetstream-log.test.ts).
 * `openFresh` gives an empty log and a way to open the same log again; it owns closing whatever it
 * hands out (t.teardown), so the suite only closes a backend where closing is the point.
 */
import type { Test } from 'tap';
import { GroupCommitter } from '../../../src/events/log/group-commit.js';
import { decodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogBackend, LogEntry, StoredRecord } from '../../../src/events/log/types.js';
import { scaled } from '../../helpers/deadline.js';

export interface FreshLog {
  backend: LogBackend;
  reopen(): Promise<LogBackend>;
}

export function logContract(t: Test, name: string, openFresh: (t: Test) => Promise<FreshLog>): void {
  t.test(`${name}: write resolves with increasing gapless seqs`, async (t) => {
    const { backend } = await openFresh(t);
    t.equal(await backend.headSeq(), 0, 'empty log');
    for (let i = 1; i <= 5; i++) t.same(await backend.write(`id-${i}`, payload(i)), { seq: i, duplicate: false });
    const concurrent = await Promise.all(range(6, 25).map((i) => backend.write(`id-${i}`, payload(i))));
    t.same(
      concurrent.map((r) => r.seq).sort((a, b) => a - b),
      range(6, 25),
      'concurrent writes take the next seqs, none twice, none skipped',
    );
    t.ok(concurrent.every((r) => !r.duplicate));
    t.equal(await backend.headSeq(), 25);
    t.ok(backend.isAvailable());
  });

  t.test(`${name}: health is ok while open, fatal once closed (only a restart reopens it)`, async (t) => {
    const { backend } = await openFresh(t);
    t.same(await backend.health(), { ok: true });
    await backend.write('h-1', payload(1));
    t.same(await backend.health(), { ok: true }, 'still ok after a write');
    await backend.close();
    t.match(await backend.health(), { ok: false, fatal: true, reason: /closed/ });
  });

  t.test(`${name}: ordered replay from a cursor`, async (t) => {
    const { backend } = await openFresh(t);
    const written = range(1, 20).map((i) => payload(i, i === 3 ? 0 : 1 + (i % 7) * 300));
    for (const [i, bytes] of written.entries()) await backend.write(`r-${i}`, bytes);

    const fromSeven = await backend.openReader(7);
    const after = await fromSeven.read(100, 0);
    t.same(seqs(after), range(8, 20), 'exactly the records after the cursor, in order');
    after.forEach((r) => t.same(Buffer.from(r.payload), Buffer.from(written[r.seq - 1]!), `payload of seq ${r.seq}`));
    // Nothing is appended after this: a read that waited for an append would never return.
    const waited = new Promise<'waited'>((resolve) => setTimeout(resolve, scaled(10_000), 'waited').unref());
    t.same(await Promise.race([fromSeven.read(100, 0), waited]), [], 'nothing more, and waitMs 0 does not wait for an append');
    await fromSeven.close();

    const chunked = await backend.openReader(0);
    const all: StoredRecord[] = [];
    for (let batch = await chunked.read(6, 0); batch.length > 0; batch = await chunked.read(6, 0)) {
      t.ok(batch.length <= 6, 'never more than max');
      all.push(...batch);
    }
    t.same(seqs(all), range(1, 20), 'chunked reads cover everything once');
    t.same(Buffer.from(all[2]!.payload).length, 0, 'empty payload round-trips');
    await chunked.close();

    const atHead = await backend.openReader(20);
    t.same(await atHead.read(10, 0), []);
    await atHead.close();
  });

  t.test(`${name}: dedupe by record id`, async (t) => {
    const fresh = await openFresh(t);
    const { backend } = fresh;
    t.same(await backend.write('same', payload(1)), { seq: 1, duplicate: false });
    t.same(await backend.write('other', payload(2)), { seq: 2, duplicate: false });
    t.same(await backend.write('same', payload(99)), { seq: 1, duplicate: true }, 'second write of an id');
    t.equal(await backend.headSeq(), 2, 'duplicate stored nothing');
    const reader = await backend.openReader(0);
    t.same(Buffer.from((await reader.read(10, 0))[0]!.payload), Buffer.from(payload(1)), 'first payload kept');
    await reader.close();

    await backend.close();
    const reopened = await fresh.reopen();
    t.same(await reopened.write('other', payload(3)), { seq: 2, duplicate: true }, 'ids survive a reopen');
    t.same(await reopened.write('new', payload(4)), { seq: 3, duplicate: false });
  });

  t.test(`${name}: redelivery after a crash`, async (t) => {
    const fresh = await openFresh(t);
    for (let i = 1; i <= 5; i++) await fresh.backend.write(`c-${i}`, payload(i));
    const reader = await fresh.backend.openReader(0);
    t.same(seqs(await reader.read(2, 0)), [1, 2]);
    const unconfirmed = await reader.read(2, 0);
    t.same(seqs(unconfirmed), [3, 4]);
    // The consumer "crashes" after handling 1-2 and before 3-4: only the cursor 2 was kept.
    await fresh.backend.close();
    const reopened = await fresh.reopen();
    const again = await reopened.openReader(2);
    const redelivered = await again.read(100, 0);
    t.same(seqs(redelivered), [3, 4, 5], 'records after the kept cursor come again');
    t.same(redelivered.slice(0, 2).map((r) => Buffer.from(r.payload)), unconfirmed.map((r) => Buffer.from(r.payload)));
    await again.close();
  });

  t.test(`${name}: reader waits for an append`, async (t) => {
    const { backend } = await openFresh(t);
    await backend.write('w-1', payload(1));
    const reader = await backend.openReader(1);

    let started = Date.now();
    t.same(await reader.read(10, 150), [], 'nothing appended: empty after waiting');
    const waited = Date.now() - started;
    // At least waitMs; the upper bound only tells "waited its waitMs" from "waited for an append".
    t.ok(waited >= 140 && waited < scaled(5_000), `waited about waitMs (${waited} ms)`);

    // A waitMs far beyond any delay of a loaded machine: returning before it means the append woke the read.
    const waitMs = scaled(60_000);
    started = Date.now();
    const pending = reader.read(10, waitMs);
    await new Promise((resolve) => setTimeout(resolve, 100));
    await backend.write('w-2', payload(2));
    const got = await pending;
    const latency = Date.now() - started;
    t.same(seqs(got), [2], 'the waiting read returns the append');
    t.ok(latency < waitMs, `woken by the append, not by the timeout (${latency} ms of ${waitMs})`);
    t.same(Buffer.from(got[0]!.payload), Buffer.from(payload(2)));
    await reader.close();
  });

  t.test(`${name}: group commit on top`, async (t) => {
    const { backend } = await openFresh(t);
    const committer = new GroupCommitter(backend);
    const resolved: number[] = [];
    await Promise.all(
      range(0, 499).map((i) => committer.commitEntries([entry(i)]).then(() => resolved.push(i))),
    );
    t.equal(resolved.length, 500, 'every append resolved');
    const head = await backend.headSeq();
    t.ok(head >= 1 && head < 500, `batched: ${head} records for 500 appends`);

    const reader = await backend.openReader(0);
    const records = await reader.read(1000, 0);
    await reader.close();
    t.same(seqs(records), range(1, head));
    const stored = records.flatMap((r) => decodeRecord(r.payload).map((e) => Number(e.messageId)));
    t.same(stored, resolved, 'each entry exactly once, in the order the appends resolved');
    t.same(stored, range(0, 499), 'which is the order they were made');
  });
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

function seqs(records: StoredRecord[]): number[] {
  return records.map((r) => r.seq);
}

/** Distinct, reproducible bytes per record. */
function payload(i: number, size = 32): Uint8Array {
  return Uint8Array.from({ length: size }, (_, j) => (i * 31 + j * 7) & 0xff);
}

function entry(i: number): LogEntry {
  return {
    kind: 'event',
    org: 'org_contract',
    environment: 'production',
    messageId: String(i),
    receivedAt: 1_767_225_600_000 + i,
    body: JSON.stringify({ type: 'track', event: 'Contract', i }),
    code: null,
    errors: null,
    facts: null,
  };
}
