import t from 'tap';
import { ManualClock } from '../../src/context.js';
import { startTestApp, waitFor } from '../helpers/app.js';

// Mutation: the cursor is NOT saved with the rows (reset after commit) → the replay must duplicate.
t.test('mutation', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 0, 1));
  const h = await startTestApp(t, { clock });
  const cred = await h.createOrg('acme');
  const { db, compactor } = h.app.audience;
  const original = db.transaction.bind(db);
  let done!: () => void; const failed = new Promise<void>((r) => (done = r));
  db.transaction = (async (work: any) => {
    db.transaction = original;
    await original(work);
        clock.advance(25 * 3600e3);
    done();
    throw new Error('x');
  }) as any;
  const batch = Array.from({ length: 10 }, (_, i) => ({ clientId: 'c', sentAt: clock.now(), type: 'track', event: 'custom', properties: { eventName: 'x', properties: {} }, traits: { email: 'a@b.c' }, messageId: `a-${i}` }));
  t.equal((await h.batch({ ...cred.production, batch })).statusCode, 200);
  await failed;
  // bug probe: does whenCompacted hang after a reload?
  const p = h.compacted().then(() => 'resolved');
  const r = await Promise.race([p, new Promise((res) => setTimeout(() => res('timeout'), 4000))]);
  t.comment(`compacted() after reload: ${r}; compactedSeq=${compactor!.compactedSeq}`);
  await waitFor(async () => (await db.all('SELECT 1 FROM events')).length > 10, 5000).catch(() => undefined);
  const rows = await db.all<{ n: bigint }>('SELECT count(*) AS n FROM events');
  t.comment(`rows: ${rows[0]!.n}`);
});
