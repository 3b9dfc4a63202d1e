/**
 * The JetStream log: the shared contract on the machine's NATS (a throwaway stream per test), and
 * outage behaviour on a private nats-server that the test stops, kills and restarts.
 */
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { JetStreamLog } from '../../../src/events/log/jetstream-log.js';
import { LogUnavailableError } from '../../../src/events/log/types.js';
import { type NodeName, startNatsCluster } from '../../helpers/nats-cluster.js';
import { hasNatsServerBinary, natsUrl, natsUrlIfReachable, startNatsServer } from '../../helpers/nats-server.js';
import { logContract } from './contract.js';
import { scaled, waitFor } from '../../helpers/deadline.js';

const run = randomBytes(4).toString('hex').toUpperCase();
const payload = (i: number): Buffer => Buffer.from(`jetstream record ${i}`);

const url = await natsUrlIfReachable();
if (url === undefined) {
  t.comment(`skipped: NATS not reachable at ${natsUrl()}`);
  t.test('jetstream contract', { skip: `NATS not reachable at ${natsUrl()}` }, () => {});
} else {
  const admin = await connect({ servers: url });
  const jsm = await jetstreamManager(admin);
  t.teardown(() => admin.close());
  let streams = 0;
  logContract(t, 'jetstream', async (t) => {
    const n = ++streams;
    const stream = `TEST_${run}_${n}`;
    const subject = `test.${run}.${n}`;
    const open = async (): Promise<JetStreamLog> => {
      const log = await JetStreamLog.open({ servers: url, stream, subject });
      t.teardown(() => log.close());
      return log;
    };
    const backend = await open();
    t.teardown(() => jsm.streams.delete(stream).then(() => {}));
    return { backend, reopen: open };
  });

  t.test('a reader says which positions the stream removed before it read them, and which a purge left empty', async (t) => {
    const stream = `TEST_${run}_SKIPPED`;
    const subject = `test.${run}.skipped`;
    const log = await JetStreamLog.open({ servers: url, stream, subject });
    t.teardown(async () => {
      await log.close();
      await jsm.streams.delete(stream);
    });
    for (let i = 1; i <= 10; i++) await log.write(`s-${i}`, payload(i), i === 8 ? 'gone' : 'kept');
    // The front up to 4 removed (as the stream's age or size limit does), and a deleted org's record purged.
    await jsm.streams.purge(stream, { seq: 5 });
    await log.purgeOrg('gone');
    const reader = await log.openReader(0);
    const seqs: number[] = [];
    const skipped: unknown[] = [];
    for (let batch = await reader.read(100, 0); batch.length > 0; batch = await reader.read(100, 0)) {
      seqs.push(...batch.map((r) => r.seq));
      skipped.push(...reader.skipped);
    }
    t.same(seqs, [5, 6, 7, 9, 10], 'the records kept, in order');
    t.same(skipped, [{ from: 1, to: 4, kind: 'released' }, { from: 8, to: 8, kind: 'gap' }], 'every position passed is accounted for');
    t.equal(reader.position, 10);
  });
}

const outage = hasNatsServerBinary() ? t.test : t.skip;

outage('NATS stopped: unavailable at once, writes fail fast; restarted: writes resume', async (t) => {
  const server = await startNatsServer(t, { syncAlways: true });
  // A publish timeout no loaded machine reaches: a refusal before it is the fast path, not the timeout.
  const publishTimeoutMs = scaled(30_000);
  const log = await JetStreamLog.open({ servers: server.url, publishTimeoutMs });
  t.equal(log.isAvailable(), true);
  t.same(await log.write('a', payload(1)), { seq: 1, duplicate: false });
  const reader = await log.openReader(0);
  t.same((await reader.read(10, 0)).map((r) => r.seq), [1]);

  await server.stop();
  await waitFor(() => !log.isAvailable(), { timeoutMs: 2_000, what: 'isAvailable() turns false' });
  const started = Date.now();
  await t.rejects(log.write('b', payload(2)), LogUnavailableError, 'write refused');
  t.ok(Date.now() - started < publishTimeoutMs, `refused in ${Date.now() - started} ms, not after the publish timeout`);
  await t.rejects(log.headSeq(), LogUnavailableError);
  // The server stays down until after this read: a read that waited for it would not return.
  const stillDown = new Promise<'still waiting'>((resolve) => setTimeout(resolve, scaled(10_000), 'still waiting').unref());
  t.same(await Promise.race([reader.read(10, 100), stillDown]), [], 'a read while down waits its waitMs and returns nothing');

  await server.restart();
  await waitFor(() => log.isAvailable(), { timeoutMs: 10_000, what: 'isAvailable() turns true after the restart' });
  t.same(await log.write('b', payload(2)), { seq: 2, duplicate: false }, 'the stream survived, seqs continue');
  const after = await reader.read(10, 1_000);
  t.same(
    after.map((r) => [r.seq, Buffer.from(r.payload).toString()]),
    [[2, payload(2).toString()]],
    'the reader carries on from its cursor (its ephemeral consumer was recreated)',
  );
  await reader.close();
  await log.close();
});

outage('nats-server killed -9: acknowledged records and their ids survive', async (t) => {
  const server = await startNatsServer(t, { syncAlways: true });
  t.comment(`sync_interval always: ${server.syncAlways ? 'yes' : 'not supported by this nats-server'}`);
  const log = await JetStreamLog.open({ servers: server.url, stream: 'KILLED', subject: 'killed.events' });
  await Promise.all(Array.from({ length: 50 }, (_, i) => log.write(`k-${i + 1}`, payload(i + 1))));

  server.kill9();
  await waitFor(() => !log.isAvailable(), { timeoutMs: 2_000, what: 'disconnect noticed' });
  await server.restart();
  await waitFor(() => log.isAvailable(), { timeoutMs: 10_000, what: 'reconnected' });

  t.equal(await log.headSeq(), 50);
  const reader = await log.openReader(0);
  const records = await reader.read(100, 0);
  t.equal(records.length, 50);
  const bySeq = new Map(records.map((r) => [r.seq, Buffer.from(r.payload).toString()]));
  t.equal(new Set(bySeq.values()).size, 50, 'all 50 distinct records are there');
  const again = await log.write('k-7', payload(7));
  t.equal(again.duplicate, true, 'the dedupe window survived the crash');
  t.equal(bySeq.get(again.seq), payload(7).toString(), 'and points at the original record');
  await reader.close();
  await log.close();
});

// nats.js keeps an ordered consumer's fetch open for good once the nats-server holding that consumer is
// gone (its R1 consumer cannot move); a storage shard whose reader sat there stopped compacting.
outage("the nats-server holding the reader's consumer is killed: reading goes on from a consumer on a live node", async (t) => {
  const cluster = await startNatsCluster(t);
  await cluster.ready();
  const log = await JetStreamLog.open({ servers: cluster.urls, stream: 'MOVED', subject: 'moved.events', replicas: 3 });
  t.teardown(() => log.close());
  for (let i = 1; i <= 3; i++) await log.write(`m-${i}`, payload(i));
  const reader = await log.openReader(0);
  t.same((await reader.read(10, 0)).map((r) => r.seq), [1, 2, 3]);

  const admin = await connect({ servers: cluster.urls.split(',') });
  t.teardown(() => admin.close());
  const [consumer] = await (await jetstreamManager(admin)).consumers.list('MOVED').next();
  const holder = consumer?.cluster?.leader as NodeName | undefined;
  t.ok(holder, `the reader's consumer is on ${holder}`);
  cluster.node(holder!).kill9();
  let written: number | undefined;
  for (let attempt = 0; written === undefined && attempt < 100; attempt++) {
    written = await log.write('m-4', payload(4)).then((r) => r.seq, () => new Promise<undefined>((r) => setTimeout(r, 300)));
  }
  t.equal(written, 4, 'the cluster took the fourth record');

  // A read returns records or throws, and the compactor then opens a new reader at its cursor, as here;
  // before, the first read never ended.
  const readUntilRecords = async (): Promise<number[]> => {
    let current = reader;
    for (;;) {
      const records = await current.read(10, 1_000).catch(async () => {
        await current.close();
        current = await log.openReader(3);
        return [];
      });
      if (records.length > 0) return records.map((r) => r.seq);
    }
  };
  const outcome = await Promise.race([readUntilRecords(), new Promise((r) => setTimeout(() => r('no record within 60 s'), 60_000).unref())]);
  t.same(outcome, [4], 'the new record was read from a consumer on a live node');
});

