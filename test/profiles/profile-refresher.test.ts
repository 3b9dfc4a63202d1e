/**
 * The refresher paces profile refreshes after each other, so under load one refresh serves many
 * compaction batches and DuckDB stays free for compaction most of the time.
 */
import t, { type Test as Tap } from 'tap';
import { OrgDatabases } from '../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../src/storage/org-storage.js';
import { type ContactKey, ProfileMaterializer } from '../../src/events/profiles/profile-materializer.js';
import { ProfileIndex } from '../../src/events/profiles/profile-index.js';
import { ProfileRefresher } from '../../src/events/profiles/profile-refresher.js';

async function setup(t: Tap, backlogIntervalMs?: number) {
  const pool = new OrgDatabases(t.testdir(), { maxOpen: 2, memoryLimit: '256MB', threads: 1, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const materializer = new ProfileMaterializer(new LocalOrgStorage(pool), new ProfileIndex());
  const refreshed: string[][] = [];
  const realRefresh = materializer.refresh.bind(materializer);
  materializer.refresh = async (keys: ContactKey[]) => {
    refreshed.push(keys.map((k) => k.email));
    await realRefresh(keys);
  };
  const errors: unknown[] = [];
  const refresher = new ProfileRefresher(materializer, (error) => errors.push(error), backlogIntervalMs);
  return { refresher, refreshed, errors };
}

const key = (email: string): ContactKey => ({ org: 'acme', email });

t.test('the first refresh of an idle service starts at once', async (t) => {
  const { refresher, refreshed } = await setup(t);
  refresher.enqueue([key('a@example.com')]);
  t.same(refreshed, [['a@example.com']], 'started in the same tick as the enqueue');
  await refresher.settled();
});

t.test('contacts enqueued right after a refresh wait for the pause and go in one refresh', async (t) => {
  const { refresher, refreshed, errors } = await setup(t);
  refresher.enqueue([key('a@example.com')]);
  await refresher.settled();
  refresher.enqueue([key('b@example.com')]);
  refresher.enqueue([key('c@example.com'), key('d@example.com')]);
  t.same(refreshed, [['a@example.com']], 'nothing started before the pause');
  await refresher.settled();
  t.same(refreshed, [['a@example.com'], ['b@example.com', 'c@example.com', 'd@example.com']]);
  t.same(errors, []);
});

t.test('contacts from a backlog wait until it is drained (or the backlog interval passes)', async (t) => {
  const HOUR = 3600_000;
  const { refresher, refreshed, errors } = await setup(t, HOUR);
  refresher.enqueue([key('a@example.com')]);
  await refresher.settled();
  refresher.enqueue([key('b@example.com')], { backlog: true });
  // Well past the ordinary pause (50 ms, or 3x a refresh of one contact).
  await new Promise((r) => setTimeout(r, 500));
  t.same(refreshed, [['a@example.com']], 'not refreshed while the backlog lasts');
  refresher.enqueue([key('c@example.com')], { backlog: false });
  await refresher.settled();
  t.same(refreshed, [['a@example.com'], ['b@example.com', 'c@example.com']], 'the end of the backlog refreshes at once, not in an hour');
  t.same(errors, []);
});
