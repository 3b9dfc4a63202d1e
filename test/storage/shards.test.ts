/**
 * Storage shards (SHARD=<i>/<n>) in NATS mode: two processes on one JetStream stream and one control
 * plane, each owning the orgs whose slug hashes to its index. Records go to per-org subjects; every
 * event lands in its owner's DATA_DIR exactly once, and nothing of an org reaches the other shard's files.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { parseShard, shardOf } from '../../src/core/shard.js';
import { customEvent, startTestApp, type OrgCredentials, type TestApp, STORAGE_PROCESS } from '../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { waitFor } from '../helpers/deadline.js';

t.test('the shard hash is FNV-1a 32 of the slug modulo n (documented, so operators can compute it)', async (t) => {
  // Reference values of 32-bit FNV-1a: "a" → 0xe40c292c, "foobar" → 0xbf9cf968.
  t.equal(shardOf('a', 2 ** 31), 0xe40c292c % 2 ** 31);
  t.equal(shardOf('foobar', 1000), 0xbf9cf968 % 1000);
  t.same(parseShard('1/3'), { index: 1, count: 3 });
  for (const bad of ['3/3', '-1/2', '1/0', '1', 'a/b', '1/2/3', ' 0/1x']) t.equal(parseShard(bad), undefined, bad);
});

if (!hasNatsServerBinary()) {
  t.test('shards on JetStream', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('two shards: each org is compacted once, by its owner only', async (t) => {
    // The server first: its teardown (kill) then runs before the fixture dir's removal, not after (ENOTEMPTY).
    const nats = await startNatsServer(t);
    const root = t.testdirName;
    const shards: TestApp[] = [];
    for (const index of [0, 1]) {
      shards.push(await startTestApp(t, { natsUrl: nats.url, dataDir: join(root, `shard${index}`), config: { ...STORAGE_PROCESS, shard: { index, count: 2 } } }));
    }
    // Two orgs on each shard.
    const slugs: string[] = [];
    for (let i = 0; slugs.filter((s) => shardOf(s, 2) === 0).length < 2 || slugs.filter((s) => shardOf(s, 2) === 1).length < 2; i++) {
      const slug = `org${i}`;
      if (slugs.filter((s) => shardOf(s, 2) === shardOf(slug, 2)).length < 2) slugs.push(slug);
    }
    const credentials = new Map<string, OrgCredentials>();
    for (const slug of slugs) credentials.set(slug, await shards[0]!.createOrg(slug));
    // The org made on shard 0 is known to shard 1 through the control plane.
    for (const slug of slugs) {
      await waitFor(() => shards[1]!.app.orgs.cached(slug) !== undefined, { timeoutMs: 5_000, intervalMs: 10, what: `${slug} known on shard 1` }).catch(() => {});
      t.ok(shards[1]!.app.orgs.cached(slug), `${slug} is known on shard 1`);
    }

    const perOrg = 6;
    for (const slug of slugs) {
      for (let i = 0; i < perOrg; i++) {
        const via = shards[i % 2]!; // both processes collect
        const res = await via.collect(customEvent(credentials.get(slug)!.production, { messageId: `${slug}-${i}`, traits: { email: `${slug}-${i}@example.com` } }));
        t.equal(res.statusCode, 200);
      }
      // A retry through the other process is deduplicated.
      t.equal((await shards[1]!.collect(customEvent(credentials.get(slug)!.production, { messageId: `${slug}-0`, traits: { email: `${slug}-0@example.com` } }))).statusCode, 200);
    }
    for (const shard of shards) await shard.compacted();

    for (const slug of slugs) {
      const owner = shardOf(slug, 2);
      const other = 1 - owner;
      const [row] = await shards[owner]!.db(slug).all<{ n: bigint; ids: bigint }>('SELECT count(*) AS n, count(DISTINCT message_id) AS ids FROM events');
      t.equal(row!.n, BigInt(perOrg), `${slug}: every event once on shard ${owner}`);
      t.equal(row!.ids, BigInt(perOrg));
      t.notOk(existsSync(join(root, `shard${other}`, 'orgs', `${slug}.duckdb`)), `${slug}: no database on shard ${other}`);
    }

    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());
    const jsm = await jetstreamManager(nc);
    const first = await jsm.streams.getMessage('AUDIENCE_EVENTS', { seq: 1 });
    t.equal(first!.subject, `audience.events.${slugs[0]}`, 'records are on their org subject');
  });

  t.test('a stream from before per-org subjects gains them at start, and its records are still compacted', async (t) => {
    // The server first: its teardown (kill) then runs before the fixture dir's removal, not after (ENOTEMPTY).
    const nats = await startNatsServer(t);
    const root = t.testdirName;
    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());
    const jsm = await jetstreamManager(nc);
    await jsm.streams.add({ name: 'AUDIENCE_EVENTS', subjects: ['audience.events'] });
    const h = await startTestApp(t, { natsUrl: nats.url, dataDir: join(root, 'data'), config: STORAGE_PROCESS });
    t.same((await jsm.streams.info('AUDIENCE_EVENTS')).config.subjects, ['audience.events', 'audience.events.>']);
    const cred = await h.createOrg('acme');
    t.equal((await h.collect(customEvent(cred.production, { messageId: 'm1' }))).statusCode, 200);
    await h.compacted();
    const [row] = await h.db('acme').all<{ n: bigint }>('SELECT count(*) AS n FROM events');
    t.equal(row!.n, 1n);
  });
}
