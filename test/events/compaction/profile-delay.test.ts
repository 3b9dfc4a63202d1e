/**
 * audience_profile_delay_seconds (finding 6 of issue 37): each compacted event is observed once, from its
 * receipt to when lookups see it (committed, its profiles refreshed), with the receipts crossing from the
 * storage process as in production, and with a test clock where the delay is known exactly.
 */
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { customEvent, startTestApp, STORAGE_PROCESS, type TestApp } from '../../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../../helpers/nats-server.js';

const scrape = async (h: TestApp) => h.metrics();
const series = (metrics: string, name: string): number => {
  const match = new RegExp(`^${name.replace(/[{}+."]/g, (c) => `\\${c}`)} (\\S+)$`, 'm').exec(metrics);
  if (!match) throw new Error(`${name} not in /metrics`);
  return Number(match[1]);
};

t.test('every compacted event is observed once; rejected ones are not', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const cred = await h.createOrg('acme');
  t.equal(series(await scrape(h), 'audience_profile_delay_seconds_count'), 0, 'exported before any event');
  for (let i = 0; i < 5; i++) t.equal((await h.collect(customEvent(cred.production, { messageId: `one-${i}`, traits: { email: `c${i}@example.com` } }))).statusCode, 200);
  const batch = Array.from({ length: 30 }, (_, i) => ({ ...customEvent(cred.production, { messageId: `b-${i}`, traits: { email: `b${i % 7}@example.com` } }), partnerId: undefined, partnerSecret: undefined }));
  const sent = await h.batch({ ...cred.production, batch });
  t.equal(sent.statusCode, 200, sent.body);
  // Quarantined at compaction (a kind of event that does not exist): it never reaches a profile.
  await h.collect(customEvent(cred.production, { type: 'bogus' }));
  await h.compacted();

  const metrics = await scrape(h);
  t.equal(series(metrics, 'audience_profile_delay_seconds_count'), 35, 'one observation per compacted event');
  t.equal(series(metrics, 'audience_profile_delay_seconds_bucket{le="+Inf"}'), 35);
  const sum = series(metrics, 'audience_profile_delay_seconds_sum');
  t.ok(sum > 0 && sum < 35 * 60, `each event's delay is under a minute (sum ${sum} s)`);
});

async function knownDelay(t: Test, options: { dataDir: string; natsUrl?: string }): Promise<void> {
  const clock = new ManualClock();
  const h = await startTestApp(t, { clock, ...options });
  const cred = await h.createOrg('acme');
  const compaction = h.app.orgStorage!.compaction!;
  await compaction.stop();
  for (let i = 0; i < 4; i++) t.equal((await h.collect(customEvent(cred.production, { messageId: `m-${i}` }))).statusCode, 200);
  clock.advance(3_000);
  await compaction.start();
  await h.compacted();

  const metrics = await scrape(h);
  t.equal(series(metrics, 'audience_profile_delay_seconds_count'), 4);
  t.equal(series(metrics, 'audience_profile_delay_seconds_sum'), 12, '4 events, each visible 3 s after its receipt');
  t.equal(series(metrics, 'audience_profile_delay_seconds_bucket{le="2.5"}'), 0);
  t.equal(series(metrics, 'audience_profile_delay_seconds_bucket{le="5"}'), 4);
}

t.test('the delay runs from receipt to the refreshed profile (test clock)', (t) => knownDelay(t, { dataDir: t.testdir() }));

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
natsTest('the same on JetStream', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  await knownDelay(t, { dataDir, natsUrl: nats.url });
});
