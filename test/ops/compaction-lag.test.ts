/**
 * When profiles trail the log, /readyz says by how much and stays 200, and the lag gauges say the same
 * (finding 6 of issue 37). The compactor is stopped to fall behind, and a test clock moves the time.
 */
import t, { type Test } from 'tap';
import { ManualClock } from '../../src/core/context.js';
import { customEvent, startTestApp, type TestApp } from '../helpers/app.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';

const readyz = (h: TestApp) => h.app.inject({ url: '/readyz' });
const gauge = async (h: TestApp, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(await h.metrics())?.[1]);

async function lagNoteAndClear(t: Test, options: { dataDir: string; natsUrl?: string }): Promise<void> {
  const clock = new ManualClock();
  const h = await startTestApp(t, { clock, ...options });
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'first' }))).statusCode, 200);
  await h.compacted();
  t.same((await readyz(h)).json().checks.compaction, { ok: true }, 'caught up: no note');

  const compaction = h.app.orgStorage!.compaction!;
  await compaction.stop();
  for (let i = 0; i < 3; i++) t.equal((await h.collect(customEvent(cred.production, { messageId: `late-${i}` }))).statusCode, 200);
  t.same((await readyz(h)).json().checks.compaction, { ok: true }, 'records waiting, but for no time yet: no note');
  clock.advance(800);
  t.same((await readyz(h)).json().checks.compaction, { ok: true }, '0.8 s: within the bound, no note');
  clock.advance(1_700);

  const behind = await readyz(h);
  t.equal(behind.statusCode, 200, 'still ready: lookups and collect are served while profiles trail');
  t.match(behind.json().checks.compaction, { ok: true, note: /^profiles are 2\.5 s behind the log \(\d+ records\)$/, details: { seconds: '2.5' } });
  const records = Number(behind.json().checks.compaction.details.records);
  t.ok(records >= 1, `${records} records waiting`);
  t.equal(await gauge(h, 'audience_compaction_lag_seconds'), 2.5, 'the gauge says the same');
  t.equal(await gauge(h, 'audience_compaction_lag_records'), records);

  await compaction.start();
  await h.compacted();
  t.same((await readyz(h)).json().checks.compaction, { ok: true }, 'caught up again: the note is gone');
  t.equal(await gauge(h, 'audience_compaction_lag_seconds'), 0);
  t.equal(await gauge(h, 'audience_compaction_lag_records'), 0);
}

t.test('/readyz carries a note while profiles are more than 1 s behind the log, and clears once caught up', (t) => lagNoteAndClear(t, { dataDir: t.testdir() }));

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
natsTest('the same on JetStream', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  await lagNoteAndClear(t, { dataDir, natsUrl: nats.url });
});
