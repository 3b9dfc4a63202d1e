/**
 * An acknowledged event is always compacted, even after the whole log is gone: the embedded log's
 * directory removed after a kill -9 (once with the checkpoint too, so only the high-water mark remembers
 * how far the orgs got), and in NATS mode the stream deleted while the service was down
 * (test/helpers/lost-log.ts). Tails cut and older copies: log-behind.test.ts.
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { behindLine, lostRecords } from '../helpers/lost-log.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';

t.test('embedded log: directory removed after a kill -9', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  await lostRecords(t, dataDir, { down: 'kill9', damage: (dir) => rm(join(dir, 'log'), { recursive: true }), line: behindLine('the embedded log', '0') });
});

t.test('embedded log: directory and checkpoint removed after a kill -9 (the high-water mark alone remembers)', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  await lostRecords(t, dataDir, {
    down: 'kill9',
    // A kill -9 between an org's commit and the checkpoint leaves the checkpoint behind that org; a lost one is the extreme.
    damage: async (dir) => (await rm(join(dir, 'log'), { recursive: true }), await rm(join(dir, 'orgs', 'log.checkpoint'))),
    line: behindLine('the embedded log', '0'),
  });
});

const withNats = hasNatsServerBinary() ? t.test : t.skip;

withNats('NATS mode: the stream deleted while the service was down', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const nats = await startNatsServer(t, { syncAlways: true });
  await lostRecords(t, dataDir, {
    env: { NATS_URL: nats.url },
    down: 'stop',
    damage: async () => {
      const nc = await connect({ servers: nats.url });
      await (await jetstreamManager(nc)).streams.delete('AUDIENCE_EVENTS');
      await nc.close();
    },
    line: behindLine('JetStream stream AUDIENCE_EVENTS', '0'),
  });
});
