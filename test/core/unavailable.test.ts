/**
 * readAgainAfterKills: a read whose storage process ended under it (another org's doing, a crash) is read
 * again, only while the client can still be answered in time; its own query's kill and other failures
 * are thrown at once.
 */
import t from 'tap';
import { setTimeout as sleep } from 'node:timers/promises';
import { StorageUnavailable, readAgainAfterKills } from '../../src/core/unavailable.js';

/** Work that fails with `errors` in turn, the tries after the first after `laterMs`, then answers 'read'. */
function failing(errors: Error[], laterMs = 0): { work: () => Promise<string>; tries: () => number } {
  let tries = 0;
  return {
    tries: () => tries,
    work: async () => {
      tries++;
      if (tries > 1 && laterMs) await sleep(laterMs);
      const error = errors[tries - 1];
      if (error) throw error;
      return 'read';
    },
  };
}

t.test('read again after restarts that were not its own doing, within its time', async (t) => {
  const crash = failing([new StorageUnavailable('crashed'), new StorageUnavailable('killed', 'other-org')]);
  t.equal(await readAgainAfterKills('quiet', 30_000, crash.work), 'read', 'answered by the third try');
  t.equal(crash.tries(), 3);
});

t.test("its own query's kill and other failures are thrown at once", async (t) => {
  const own = failing([new StorageUnavailable('killed', 'noisy')]);
  await t.rejects(readAgainAfterKills('noisy', 30_000, own.work), { code: 'storage_unavailable' });
  t.equal(own.tries(), 1);
  const other = failing([new Error('syntax')]);
  await t.rejects(readAgainAfterKills('quiet', 30_000, other.work), { message: 'syntax' });
  t.equal(other.tries(), 1);
});

t.test('at most three tries', async (t) => {
  const loop = failing([1, 2, 3, 4].map(() => new StorageUnavailable('crash loop')));
  await t.rejects(readAgainAfterKills('quiet', 30_000, loop.work), { code: 'storage_unavailable' });
  t.equal(loop.tries(), 3);
});

t.test('not read again once its time has passed: 503 with Retry-After, not a client timeout', async (t) => {
  // A query deadline of 1 s allows 2 s of tries: the first ends in a restart at once, the second after the whole 2 s; no third.
  const slow = failing([1, 2, 3].map(() => new StorageUnavailable('restarted')), 2000);
  const error = await readAgainAfterKills('quiet', 1000, slow.work).catch((e: unknown) => e);
  t.ok(error instanceof StorageUnavailable, 'the restart is answered');
  t.equal((error as StorageUnavailable).extra.headers?.['Retry-After'], '1');
  t.equal(slow.tries(), 2, 'tried again while under its time, then no more');
});
