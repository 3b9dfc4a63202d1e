/**
 * Many orgs, few open databases: 24 orgs receive events (in batches that mix them), profile lookups and
 * flow runs, while at most ORG_DATABASES_MAX_OPEN of their databases are open at once; nothing is lost.
 */
import t from 'tap';
import { customEvent, startTestApp, STORAGE_PROCESS } from '../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../helpers/flows.js';
import { scaled } from '../helpers/deadline.js';

// 6 orgs per pool slot (100 before: 284–300 s beside the suite on a slow machine, 2026-11-26; 48 took
// 177 s beside the suite on 2026-11-27): each database is still opened and closed again many times, and
// several are open at once.
const ORGS = 24;
const MAX_OPEN = 4;
const EVENTS_PER_ORG = 3;
// 24 orgs' databases opened and closed through a pool of 4: ~15 s on a quiet 2-core machine, more under load.
t.setTimeout(scaled(300_000));

t.test(`${ORGS} orgs with at most ${MAX_OPEN} databases open: every event stored, lookups and flows work`, async (t) => {
  const h = await startTestApp(t, { config: { ...STORAGE_PROCESS, orgDatabasesMaxOpen: MAX_OPEN, orgDatabaseIdleMs: 1000 } });
  const slugs = Array.from({ length: ORGS }, (_, i) => `org_${String(i).padStart(3, '0')}`);
  const creds = new Map<string, { partnerId: string; partnerSecret: string }>();
  for (const slug of slugs) creds.set(slug, (await h.createOrg(slug, { audienceApi: true })).production);

  // Events of all orgs, interleaved, so that one compaction batch holds many orgs.
  const sends: Promise<unknown>[] = [];
  for (let n = 0; n < EVENTS_PER_ORG; n++) {
    for (const slug of slugs) {
      sends.push(
        h.collect(customEvent(creds.get(slug)!, { messageId: `${slug}-${n}`, traits: { email: `${slug}.c${n}@example.com` } })).then((res) => {
          if (res.statusCode !== 200) throw new Error(`${slug}-${n}: ${res.statusCode} ${res.body}`);
        }),
      );
    }
  }
  await Promise.all(sends);
  await h.compacted();

  const counts: string[] = [];
  for (const slug of slugs) {
    const [row] = await h.db(slug).all<{ n: bigint; others: bigint }>('SELECT count(*) FILTER (WHERE org = $1) AS n, count(*) FILTER (WHERE org <> $1) AS others FROM events', [slug]);
    if (row!.n !== BigInt(EVENTS_PER_ORG) || row!.others !== 0n) counts.push(`${slug}: ${row!.n} own, ${row!.others} others`);
  }
  t.same(counts, [], `every org's database holds exactly its ${EVENTS_PER_ORG} events`);

  // Lookups across orgs (profiles are served from memory, built from each org's database).
  for (const slug of slugs.filter((_, i) => i % 10 === 0)) {
    const token = (await h.admin('POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'ops@example.com' })).json().token as string;
    const res = await h.app.inject({ url: `/audience/v2/contacts?identity=email:${slug}.c1@example.com`, headers: { authorization: `Bearer ${token}` } });
    t.equal(res.statusCode, 200, `${slug}: lookup`);
  }

  // Flows in a few orgs, their trigger SQL in their own databases.
  const flowOrgs = slugs.filter((_, i) => i % 20 === 0);
  for (const slug of flowOrgs) {
    await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER, slug);
    await startFlow(h, { id: 'f1', scheduleSeconds: 3600, realTime: false, message: { channel: 'outbox', template: { e: '{{ event.event_id }}' } } }, slug);
    t.equal((await h.collect(customEvent(creds.get(slug)!, { messageId: `${slug}-flow` }))).statusCode, 200);
  }
  for (const slug of flowOrgs) {
    const summary = await runFlow(h, 'f1', slug);
    t.same(summary.decisions.map((d) => `${d.eventId}:${d.outcome}`), [`${slug}-flow:sent`], `${slug}: one send`);
  }

  const pool = await h.app.orgStorage!.poolStats();
  t.ok(pool.highWater <= MAX_OPEN, `at most ${MAX_OPEN} open at once (${pool.highWater})`);
  t.ok(pool.highWater > 1, 'several were open at once');
});
