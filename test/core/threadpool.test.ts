/**
 * The check that libuv's pool really has the threads a process relies on (src/core/threadpool.ts): exact, not
 * timed, in real processes started with a given UV_THREADPOOL_SIZE, and the storage process refuses to
 * start when the pool it got is smaller than the one it needs.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import t from 'tap';
import { SINGLE_SHARD } from '../../src/core/shard.js';
import { StorageProcess } from '../../src/storage/storage-client.js';
import { ROOT } from '../helpers/paths.js';

function probe(poolSize: string, threads: number[]): boolean[] {
  const script = `const { threadPoolHasAtLeast } = await import('./src/core/threadpool.ts'); const out = []; for (const n of ${JSON.stringify(threads)}) out.push(await threadPoolHasAtLeast(n, 1000)); console.log(JSON.stringify(out));`;
  const stdout = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: ROOT, env: { ...process.env, UV_THREADPOOL_SIZE: poolSize }, encoding: 'utf8' });
  return JSON.parse(stdout) as boolean[];
}

t.test('the pool in force is measured exactly', async (t) => {
  t.same(probe('6', [1, 4, 6, 7, 16]), [true, true, true, false, false], 'a pool of 6');
  t.same(probe('16', [16, 17]), [true, false], 'a pool of 16');
});

t.test('a storage process whose pool is smaller than it needs does not start', async (t) => {
  const dir = t.testdir();
  const start = StorageProcess.start({
    data: {
      orgsDir: join(dir, 'orgs'),
      limits: { maxOpen: 4, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 },
      checkpointFile: join(dir, 'orgs', 'log.checkpoint'),
      shard: SINGLE_SHARD,
      threadPoolSize: 16,
    },
    process: { env: { UV_THREADPOOL_SIZE: '8' } },
    events: { onCompacted: () => {}, onMetric: () => {}, onError: () => {}, onRestarted: () => {} },
  });
  await t.rejects(start, /storage process did not start: it exited with code 1/);
});
