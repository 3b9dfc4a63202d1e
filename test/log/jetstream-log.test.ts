/**
 * The JetStream log: the shared contract on the machine's NATS (a throwaway stream per test), and
 * outage behaviour on a private nats-server that the test stops, kills and restarts.
 */
import { randomBytes } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { JetStreamLog } from '../../src/log/jetstream-log.js';
import { LogUnavailableError } from '../../src/log/types.js';
import { hasNatsServerBinary, natsUrl, natsUrlIfReachable, startNatsServer } from '../helpers/nats-server.js';
import { logContract } from './contract.js';

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
}

const outage = hasNatsServerBinary() ? t.test : t.skip;

outage('NATS stopped: unavailable at once, writes fail fast; restarted: writes resume', async (t) => {
  const server = await startNatsServer(t, { syncAlways: true });
  const log = await JetStreamLog.open({ servers: server.url });
  t.equal(log.isAvailable(), true);
  t.same(await log.write('a', payload(1)), { seq: 1, duplicate: false });
  const reader = await log.openReader(0);
  t.same((await reader.read(10, 0)).map((r) => r.seq), [1]);

  await server.stop();
  await waitUntil(() => !log.isAvailable(), 2_000, 'isAvailable() turns false');
  let started = Date.now();
  await t.rejects(log.write('b', payload(2)), LogUnavailableError, 'write refused');
  t.ok(Date.now() - started < 1_000, `refused in ${Date.now() - started} ms, not after the publish timeout`);
  await t.rejects(log.headSeq(), LogUnavailableError);
  started = Date.now();
  t.same(await reader.read(10, 100), [], 'a read while down waits its waitMs and returns nothing');
  t.ok(Date.now() - started < 1_000);

  await server.restart();
  await waitUntil(() => log.isAvailable(), 10_000, 'isAvailable() turns true after the restart');
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
  await waitUntil(() => !log.isAvailable(), 2_000, 'disconnect noticed');
  await server.restart();
  await waitUntil(() => log.isAvailable(), 10_000, 'reconnected');

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

async function waitUntil(condition: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting until ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
