/**
 * An acknowledged event is always compacted, even after the embedded log lost records the orgs had
 * already compacted — its tail cut, or an older copy of it put back — with the service stopped or killed
 * -9 first (test/helpers/lost-log.ts). New records are numbered above every position an org may hold
 * (storage/checkpoint.ts), not skipped as already applied; the restarted service says so in one line.
 * Directories and streams removed outright: log-lost.test.ts.
 */
import { cp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import t from 'tap';
import { spawnServer } from '../helpers/server-process.js';
import { behindLine, cutTail, lostRecords } from '../helpers/lost-log.js';

t.test('embedded log: tail cut while stopped', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  await lostRecords(t, dataDir, { down: 'stop', damage: (dir) => cutTail(join(dir, 'log'), 10), line: behindLine('the embedded log', '10') });
});

t.test('embedded log: tail cut after a kill -9', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  await lostRecords(t, dataDir, { down: 'kill9', damage: (dir) => cutTail(join(dir, 'log'), 5), line: behindLine('the embedded log', '5') });
});

t.test('embedded log: an older copy of the log directory put back', async (t) => {
  const dataDir = join(t.testdir(), 'data');
  const copy = join(t.testdirName, 'log-copy');
  await lostRecords(t, dataDir, {
    down: 'stop',
    midway: async (server) => {
      await server.stop();
      await cp(join(dataDir, 'log'), copy, { recursive: true });
      return spawnServer(t, { DATA_DIR: dataDir });
    },
    damage: async (dir) => {
      await rm(join(dir, 'log'), { recursive: true });
      await cp(copy, join(dir, 'log'), { recursive: true });
    },
    line: behindLine('the embedded log', '\\d+'),
  });
});
