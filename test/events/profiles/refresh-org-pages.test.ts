/**
 * A whole-org refresh (at start, after a settings change) of an org whose profiles do not fit its DuckDB
 * memory share in one query: it reads them a page of contacts at a time, so every profile is served.
 * 200,000 contacts with 3 orders, 1 send and 1 trait each (helpers/large-org.ts), opened with 128 MiB: in one query DuckDB
 * answered "Out of Memory Error".
 */
import { join } from 'node:path';
import t from 'tap';
import { LocalDatabase } from '../../../src/db/database.js';
import { applyOrgSchema } from '../../../src/storage/migrate.js';
import { OrgDatabases } from '../../../src/storage/org-databases.js';
import { LocalOrgStorage } from '../../../src/storage/org-storage.js';
import { ProfileMaterializer } from '../../../src/events/profiles/profile-materializer.js';
import { ProfileIndex } from '../../../src/events/profiles/profile-index.js';
import { writeLargeOrg } from '../../helpers/large-org.js';

const CONTACTS = 200_000;

t.test('every profile of an org larger than its memory share is loaded', async (t) => {
  const dir = t.testdir();
  // Written with DuckDB's default memory, as an org grows over many batches.
  const writer = await LocalDatabase.open(join(dir, 'big.duckdb'));
  await applyOrgSchema(writer);
  await writer.transaction(async (c) => {
    await writeLargeOrg(c, 'big', CONTACTS);
    // Contacts known from events only, folded and not: a page takes them as profiles_for does.
    await c.run(`INSERT INTO contact_activity BY NAME SELECT 'big' AS org, 'folded' || i || '@example.com' AS email, now() AS first_seen_at, now() AS last_seen_at, 1 AS revenue FROM range(3) r(i)`);
    await c.run(
      `INSERT INTO events BY NAME SELECT 'big' AS org, 'production' AS environment, 'm' || i AS message_id, 'track' AS event_type, 'custom_x' AS event_name,
              'c' AS client_id, 'unfolded' || i || '@example.com' AS email, now() AS received_at, now() AS event_time, now() + INTERVAL 1 HOUR AS visible_at,
              '{"raw":true}' AS raw, i AS log_seq FROM range(2) r(i)`,
    );
  });
  await writer.close();

  const pool = new OrgDatabases(dir, { maxOpen: 1, memoryLimit: '128MiB', threads: 2, idleCloseMs: 60_000 });
  t.teardown(() => pool.close());
  const index = new ProfileIndex();
  await new ProfileMaterializer(new LocalOrgStorage(pool), index).refreshOrg('big');

  t.equal(index.size('big'), CONTACTS + 5, 'every contact, imported or from events only, has its profile');
  for (const e of ['c0@example.com', `c${CONTACTS - 1}@example.com`, 'folded2@example.com', 'unfolded1@example.com']) {
    t.ok(index.find('big', 'email', e), `${e} is served`);
  }
  const c7 = index.find('big', 'email', 'c7@example.com');
  t.same(
    { orders: c7?.order_count, campaigns: c7?.campaigns_received },
    { orders: 3, campaigns: ['f7'] },
    "a contact's orders and sends are in its profile",
  );
});
