/**
 * Deleting an org: its credentials and tokens stop working at once, its database goes and is never
 * created again (not by its events still in the log, not after a restart), its slug is never given to
 * another org, and no other org loses anything.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { DEFAULT_STREAM, DEFAULT_SUBJECT } from '../../../src/events/log/jetstream-log.js';
import { DEFAULT_PROFILES_BUCKET } from '../../../src/events/profiles/profile-feed.js';
import { type OrgCredentials, type TestApp, customEvent, startTestApp, waitFor } from '../../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../../helpers/nats-server.js';

const natsTest = hasNatsServerBinary() ? t.test : t.skip;

async function setUp(h: TestApp): Promise<{ acme: OrgCredentials; beta: OrgCredentials; token: string }> {
  const acme = await h.createOrg('acme', { audienceApi: true });
  const beta = await h.createOrg('beta');
  for (const [cred, prefix] of [
    [acme, 'a'],
    [beta, 'b'],
  ] as const) {
    for (let i = 0; i < 5; i++) t.equal((await h.collect(customEvent(cred.production, { messageId: `${prefix}-${i}` }))).statusCode, 200);
  }
  await h.compacted();
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  return { acme, beta, token };
}

const lookup = (h: TestApp, token: string) =>
  h.app.inject({ url: '/audience/v2/contacts?identity=email:ada@example.com', headers: { authorization: `Bearer ${token}`, accept: 'application/json' } });

t.test('a deleted org is gone for good, and no other org loses anything', async (t) => {
  const dataDir = t.testdir();
  // Compaction on this thread, so the test can hold it while an event waits in the log.
  const options = { dataDir, config: { storageProcess: 'inline' as const } };
  let h = await startTestApp(t, options);
  const { acme, beta, token } = await setUp(h);
  t.equal((await lookup(h, token)).statusCode, 200, 'the token works before');
  const acmeFile = join(dataDir, 'orgs', 'acme.duckdb');
  t.ok(existsSync(acmeFile));

  // An event still in the log when the org is deleted must not bring its database back.
  const compaction = h.app.orgStorage!.compaction!;
  await compaction.stop();
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'late' }))).statusCode, 200);
  const deleted = await h.admin('DELETE', '/admin/v1/orgs/acme');
  await compaction.start();
  t.equal(deleted.statusCode, 200);
  t.match(deleted.json(), { slug: 'acme', deleted: true, deletedAt: /^\d{4}-/ });
  await h.compacted();

  t.notOk(existsSync(acmeFile), "the org's database file is gone");
  t.notOk(existsSync(`${acmeFile}.wal`));
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'after' }))).statusCode, 401, 'its partner credentials stop working');
  t.equal((await h.collect(customEvent(acme.staging, { messageId: 'after' }))).statusCode, 401, 'both of them');
  t.equal((await lookup(h, token)).statusCode, 401, 'its tokens stop working');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme')).statusCode, 404);
  t.same((await h.admin('GET', '/admin/v1/orgs')).json().orgs.map((o: { slug: string }) => o.slug), ['beta'], 'the list has the others only');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/events/types')).statusCode, 404, 'its data cannot be read');
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/tokens')).statusCode, 404);
  t.same(h.app.tokens.list('acme'), [], 'no token hash is kept in memory');
  t.same((await h.app.control.get('tokens.acme'))?.value, { tokens: [] }, 'nor in the control plane');
  const tombstone = (await h.app.control.get('org.acme'))?.value as Record<string, unknown>;
  t.same(Object.keys(tombstone), ['deletedAt'], 'the org document keeps nothing but the time of deletion');

  const again = await h.admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'Another Acme' });
  t.equal(again.statusCode, 409, 'the slug is never given to another org');
  t.match(again.json(), { code: 'org_exists', detail: /belonged to an org that was deleted/ });
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme')).statusCode, 404, 'deleting twice: 404');

  const betaTypes = (await h.admin('GET', '/admin/v1/orgs/beta/events/types')).json();
  t.equal(betaTypes.types.reduce((n: number, ty: { count: number }) => n + ty.count, 0), 5, "the other org's events are all there");
  t.equal((await h.collect(customEvent(beta.production, { messageId: 'b-after' }))).statusCode, 200, 'and it takes events');

  // After a restart: still deleted, still no database, the slug still taken.
  await h.close();
  h = await startTestApp(t, options);
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'after-restart' }))).statusCode, 401);
  t.equal((await h.admin('POST', '/admin/v1/orgs', { slug: 'acme', name: 'x' })).statusCode, 409);
  await h.compacted();
  t.notOk(existsSync(acmeFile), 'replaying the log at start does not recreate it');
  t.same((await h.admin('GET', '/admin/v1/orgs')).json().orgs.map((o: { slug: string }) => o.slug), ['beta']);
});

t.test('delete: admin key and slug checked', async (t) => {
  const h = await startTestApp(t);
  await h.createOrg('acme');
  t.equal((await h.app.inject({ method: 'DELETE', url: '/admin/v1/orgs/acme' })).statusCode, 401, 'no admin key');
  t.equal((await h.app.inject({ method: 'DELETE', url: '/admin/v1/orgs/acme', headers: { authorization: 'Bearer wrong-key-0123456789abc' } })).statusCode, 401);
  for (const slug of ['..%2Fbeta', '__proto__', 'ACME', 'a'.repeat(41), 'acme%00']) {
    const res = await h.admin('DELETE', `/admin/v1/orgs/${slug}`);
    t.equal(res.statusCode, 400, `${slug}: 400`);
  }
  t.equal((await h.admin('DELETE', '/admin/v1/orgs/nosuch')).statusCode, 404);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme')).statusCode, 200, 'nothing else was deleted');
});

natsTest('NATS mode: the deleted org\'s events leave the stream and its profiles the bucket; the other org\'s stay', async (t) => {
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  const h = await startTestApp(t, { natsUrl: nats.url, dataDir });
  await setUp(h);
  const nc = await connect({ servers: nats.url });
  t.teardown(() => nc.close());
  const jsm = await jetstreamManager(nc);
  const subjects = async (stream: string, filter: string) => (await jsm.streams.info(stream, { subjects_filter: filter })).state.subjects ?? {};
  const profileKeys = async (org: string) => Object.keys(await subjects(`KV_${DEFAULT_PROFILES_BUCKET}`, `$KV.${DEFAULT_PROFILES_BUCKET}.${org}.>`)).length;
  t.ok((await subjects(DEFAULT_STREAM, `${DEFAULT_SUBJECT}.acme`))[`${DEFAULT_SUBJECT}.acme`]! > 0, 'acme has events in the stream');
  await waitFor(async () => (await profileKeys('acme')) > 0);

  t.equal((await h.admin('DELETE', '/admin/v1/orgs/acme')).statusCode, 200);
  t.same(await subjects(DEFAULT_STREAM, `${DEFAULT_SUBJECT}.acme`), {}, 'no acme event is left in the stream');
  t.equal(await profileKeys('acme'), 0, 'no acme profile is left in the bucket');
  t.equal((await subjects(DEFAULT_STREAM, `${DEFAULT_SUBJECT}.beta`))[`${DEFAULT_SUBJECT}.beta`], 5, "beta's events are all there");
  t.ok((await profileKeys('beta')) > 0, "and beta's profiles");
  t.notOk(existsSync(join(dataDir, 'orgs', 'acme.duckdb')));
});
