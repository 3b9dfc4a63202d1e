/**
 * Scheduled and recurring sends to a segment (issue 26), end to end with a manual clock: real app, real
 * DuckDB, a real HTTP receiver and a real SMTP server. Each member once per occurrence at its time (the org's
 * zone, or each contact's), decided as a triggered entry is (consent, quiet hours, experiment, branches,
 * caps), throttled by sendRatePerSecond, resumed by a new process where the last left off; late occurrences
 * skipped with why, missed recurring ones not caught up; an erased contact left out.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { ADMIN_KEY, startTestApp, type TestApp, waitFor } from '../../helpers/app.js';
import { putQuery } from '../../helpers/flows.js';
import { startReceiver } from '../../helpers/http-receiver.js';
import { smtpServer } from '../../helpers/smtp-server.js';

const MINUTE = 60_000;
const OUTBOX = { channel: 'outbox', template: { to: '{{ contact.email_address }}', occurrence: '{{ event.event_id }}' } };
const EVERYONE = "SELECT email_address AS email FROM profiles WHERE email_address LIKE '%@example.com'";

interface Occurrence {
  occurrence: string;
  status: string;
  dueAt: string;
  nextDueAt: string | null;
  members: number;
  missed: number;
  decided: number;
  outcomes: Record<string, number>;
  reason: string | null;
}

async function importContacts(h: TestApp, rows: Array<Record<string, string>>): Promise<void> {
  const res = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/contacts/import',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/x-ndjson' },
    payload: rows.map((r) => JSON.stringify(r)).join('\n'),
  });
  if (res.statusCode !== 200 || res.json().imported !== rows.length) throw new Error(`import: ${res.statusCode} ${res.body}`);
}

/** Creates and starts a scheduled (or recurring, by its schedule) flow sending to the segment `everyone`. */
async function startSend(h: TestApp, definition: Record<string, unknown>): Promise<void> {
  const category = 'at' in (definition.schedule as object) ? 'scheduled' : 'recurring';
  const created = await h.admin('POST', '/admin/v1/orgs/acme/flows', { name: 'Newsletter', category, audience: { segment: 'everyone' }, message: OUTBOX, ...definition });
  if (created.statusCode !== 201) throw new Error(`create: ${created.statusCode} ${created.body}`);
  const started = await h.admin('POST', `/admin/v1/orgs/acme/flows/${definition.id as string}/start`);
  if (started.statusCode !== 200) throw new Error(`start: ${started.statusCode} ${started.body}`);
}

/** The app with its scheduled sends ticked by the test (tick()), not by their timer: each step happens when the test says. */
async function startApp(t: Parameters<typeof startTestApp>[0], options: Parameters<typeof startTestApp>[1]): Promise<TestApp> {
  const h = await startTestApp(t, options);
  await h.app.flowsRole!.scheduled.close();
  return h;
}

/** One tick at the clock's time, and what it queued delivered. */
async function tick(h: TestApp): Promise<void> {
  await h.app.flowsRole!.scheduled.sendDue();
  await h.app.flowsRole!.dispatcher.idle();
}

async function occurrences(h: TestApp, id: string): Promise<Occurrence[]> {
  const res = await h.admin('GET', `/admin/v1/orgs/acme/flows/${id}/occurrences`);
  if (res.statusCode !== 200) throw new Error(`occurrences: ${res.statusCode} ${res.body}`);
  return res.json().occurrences as Occurrence[];
}

async function decisions(h: TestApp, id: string, email: string) {
  return (await h.admin('GET', `/admin/v1/orgs/acme/flows/${id}/decisions?identity=email:${email}`)).json().decisions as Array<{ outcome: string; eventId: string; variant: string | null; reason: string | null }>;
}

function outbox(h: TestApp): Array<{ sendId: string; flowId: string; email: string; eventId: string; content: { to: string; occurrence: string } }> {
  try {
    return readFileSync(join(h.dataDir, 'outbox', 'acme.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((line) => JSON.parse(line));
  } catch {
    return [];
  }
}

t.test('a scheduled send: each member once, at its time in the org zone, decided as a triggered entry is', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 13, 0)); // 08:00 in New York
  const h = await startApp(t, { clock });
  await h.createOrg('acme', { timeZone: 'America/New_York', quietHours: { start: '21:00', end: '08:00', timeZone: 'contact' } });
  const receiver = await startReceiver();
  t.teardown(() => receiver.close());
  await importContacts(h, [
    { email_address: 'ada@example.com', first_name: 'Ada' },
    { email_address: 'bob@example.com', first_name: 'Bob' },
    { email_address: 'kai@example.com', first_name: 'Kai', timezone: 'Asia/Tokyo' },
    { email_address: 'zoe@example.org', first_name: 'Zoe' },
  ]);
  await putQuery(h, 'segments', 'everyone', EVERYONE);
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/contacts/consent', { identity: 'email:bob@example.com', topic: 'all', status: 'unsubscribed' })).statusCode, 200);
  const body = (greeting: string) => ({ greeting, to: '{{ contact.email_address }}', occurrence: '{{ event.event_id }}', variant: '{{ variant.label }}' });
  await startSend(h, {
    id: 'launch',
    schedule: { at: '2026-12-01T09:00', timeZone: 'org' },
    experiment: { variants: [{ label: 'A', weight: 1 }] },
    branches: [{ when: { field: 'contact.first_name', op: 'eq', value: 'Kai' }, message: { channel: 'webhook', url: receiver.url, template: { body: body('Konnichiwa') } } }],
    message: { channel: 'webhook', url: receiver.url, template: { body: body('Hello') } },
  });

  await tick(h);
  t.equal(receiver.received.length, 0, 'nothing before 09:00 in New York');
  t.same(await occurrences(h, 'launch'), [], 'no occurrence yet');
  clock.set(Date.UTC(2026, 11, 1, 14, 0));
  await tick(h);
  const bodies = receiver.received.map((r) => JSON.parse(r.body) as Record<string, string>);
  t.same(bodies.map((b) => [b.to, b.greeting, b.occurrence, b.variant]), [['ada@example.com', 'Hello', 'occurrence:2026-12-01T09:00', 'A']], 'only Ada now: Bob unsubscribed, Kai in quiet hours, Zoe not in the segment');
  t.match(await decisions(h, 'launch', 'bob@example.com'), [{ outcome: 'unsubscribed', eventId: 'occurrence:2026-12-01T09:00' }]);
  t.match(await decisions(h, 'launch', 'kai@example.com'), [{ outcome: 'deferred_quiet_hours', variant: 'A', reason: /quiet hours in Asia\/Tokyo until 2026-12-01T23:00:00.000Z/ }]);
  t.same(await decisions(h, 'launch', 'zoe@example.org'), []);
  t.match(await occurrences(h, 'launch'), [
    { occurrence: '2026-12-01T09:00', status: 'done', dueAt: '2026-12-01T14:00:00.000Z', nextDueAt: null, members: 3, missed: 0, decided: 3, outcomes: { sent: 1, unsubscribed: 1, deferred_quiet_hours: 1 }, reason: null },
  ]);
  t.equal((await h.admin('GET', '/admin/v1/orgs/acme/flows/launch')).json().lastRunAt, '2026-12-01T14:00:00.000Z', 'the flow shows when its occurrence started');

  clock.advance(MINUTE);
  await tick(h);
  clock.advance(24 * 60 * MINUTE);
  await tick(h);
  t.equal(receiver.received.length, 1, 'ticks after it send nothing again');
  clock.set(Date.UTC(2026, 11, 1, 23, 0)); // 08:00 in Tokyo
  t.equal(await h.app.flowsRole!.deferred.release('acme'), 1, "Kai's message at the end of his quiet hours");
  await h.app.flowsRole!.dispatcher.idle();
  const kai = JSON.parse(receiver.received[1]!.body) as Record<string, string>;
  t.same([kai.to, kai.greeting], ['kai@example.com', 'Konnichiwa'], 'the branch on his profile');
  const ids = receiver.received.map((r) => r.headers['webhook-id']);
  t.equal(new Set(ids).size, 2, 'two send ids');

  for (const [method, path] of [['POST', 'run'], ['POST', 'simulate']] as const) {
    const res = await h.admin(method, `/admin/v1/orgs/acme/flows/launch/${path}`, path === 'run' ? {} : { identity: 'email:ada@example.com' });
    t.equal(res.statusCode, 409, path);
    t.equal(res.json().code, 'flow_not_triggered');
  }
});

t.test("a recurring send in each contact's zone: 09:00 where they are, every week, once per occurrence; an erased contact left out", async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 10, 29, 18, 0)); // Sunday 18:00 UTC
  const smtp = await smtpServer(t);
  const h = await startApp(t, { clock, config: { smtpUrl: smtp.url } });
  await h.createOrg('acme', { timeZone: 'Europe/Lisbon' });
  await importContacts(h, [
    { email_address: 'tokyo@example.com', timezone: 'Asia/Tokyo' },
    { email_address: 'lisbon@example.com' },
    { email_address: 'ny@example.com', timezone: 'America/New_York' },
    { email_address: 'odd@example.com', timezone: 'Not/AZone' },
  ]);
  await putQuery(h, 'segments', 'everyone', EVERYONE);
  await startSend(h, {
    id: 'weekly',
    schedule: { every: 'week', weekday: 'monday', time: '09:00', timeZone: 'contact', startsOn: '2026-11-30', endsOn: '2026-12-07' },
    message: { channel: 'email', template: { subject: 'Your week, {{ contact.email_address }}', text: 'Hello' } },
  });
  const mailedTo = () => smtp.mails.map((m) => m.to[0]);

  await tick(h);
  t.same(await occurrences(h, 'weekly'), [], "Monday 09:00 has come nowhere yet (it is 04:00 in Kiritimati)");
  clock.set(Date.UTC(2026, 10, 29, 19, 0)); // Monday 09:00 at UTC+14
  await tick(h);
  t.match(await occurrences(h, 'weekly'), [{ occurrence: '2026-11-30T09:00', status: 'sending', members: 4, decided: 0, nextDueAt: '2026-11-30T00:00:00.000Z' }], 'started: each member due at 09:00 in their zone');
  t.equal(smtp.mails.length, 0);
  clock.set(Date.UTC(2026, 10, 30, 0, 0)); // 09:00 in Tokyo
  await tick(h);
  t.same(mailedTo(), ['tokyo@example.com']);
  clock.set(Date.UTC(2026, 10, 30, 9, 0)); // 09:00 in Lisbon, the org's zone: also the one with an unknown zone
  await tick(h);
  t.same(mailedTo().slice(1).sort(), ['lisbon@example.com', 'odd@example.com']);
  t.match(await occurrences(h, 'weekly'), [{ status: 'sending', decided: 3, nextDueAt: '2026-11-30T14:00:00.000Z' }]);

  // Erased before 09:00 in New York: left out of the occurrence (and never decided).
  const erase = await h.admin('POST', '/admin/v1/orgs/acme/contacts/erase', { identity: 'email:ny@example.com' });
  t.equal(erase.statusCode, 202, erase.body);
  const receipt = await waitFor(async () => {
    const got = (await h.admin('GET', `/admin/v1/orgs/acme/erasures/${erase.json().id as string}`)).json();
    return got.status === 'done' ? (got as { removed: Record<string, number> }) : undefined;
  }, 20_000);
  t.equal(receipt.removed.occurrenceMembers, 1, 'its place in the occurrence, removed');
  clock.set(Date.UTC(2026, 10, 30, 14, 0)); // 09:00 in New York
  await tick(h);
  t.equal(smtp.mails.length, 3, 'nothing for the erased contact');
  t.match(await occurrences(h, 'weekly'), [{ status: 'done', members: 4, decided: 3, outcomes: { sent: 3 } }]);

  // The next Monday: a new occurrence, each member again, once.
  clock.set(Date.UTC(2026, 11, 7, 0, 0));
  await tick(h);
  clock.set(Date.UTC(2026, 11, 7, 23, 0));
  await tick(h);
  t.same((await occurrences(h, 'weekly')).map((o) => [o.occurrence, o.status, o.decided]), [['2026-12-07T09:00', 'done', 3], ['2026-11-30T09:00', 'done', 3]]);
  const ids = smtp.mails.map((m) => /^Message-ID: <([^@>]+)@/im.exec(m.data)?.[1]);
  t.equal(new Set(ids).size, 6, 'six messages, six ids');
  t.same(mailedTo().sort(), ['lisbon@example.com', 'lisbon@example.com', 'odd@example.com', 'odd@example.com', 'tokyo@example.com', 'tokyo@example.com']);
  clock.set(Date.UTC(2026, 11, 14, 23, 0));
  await tick(h);
  t.equal(smtp.mails.length, 6, 'none after endsOn');
});

t.test('throttled by sendRatePerSecond, resumed by the next process where the last one stopped', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 9, 0));
  const dataDir = t.testdir();
  let h = await startApp(t, { clock, dataDir });
  await h.createOrg('acme');
  await importContacts(h, Array.from({ length: 12 }, (_, i) => ({ email_address: `m${String(i).padStart(2, '0')}@example.com` })));
  await putQuery(h, 'segments', 'everyone', EVERYONE);
  await startSend(h, { id: 'slow', sendRatePerSecond: 5, schedule: { at: '2026-12-01T09:00', timeZone: 'org' } });
  await tick(h);
  t.equal(outbox(h).length, 5, 'five in the first second');
  await tick(h);
  t.equal(outbox(h).length, 5, 'none more within the same second');
  clock.advance(3000);
  await tick(h);
  t.equal(outbox(h).length, 10, 'three seconds later, five more: a second of sends at most at once');
  t.match(await occurrences(h, 'slow'), [{ status: 'sending', decided: 10, members: 12 }]);

  await h.close();
  h = await startApp(t, { clock, dataDir });
  t.match(await occurrences(h, 'slow'), [{ status: 'sending', decided: 10 }], 'a new process finds it where it was');
  clock.advance(1000);
  await tick(h);
  const sent = outbox(h);
  t.equal(sent.length, 12, 'the last two');
  t.same(sent.map((s) => s.email).sort(), Array.from({ length: 12 }, (_, i) => `m${String(i).padStart(2, '0')}@example.com`), 'each member once');
  t.equal(new Set(sent.map((s) => s.sendId)).size, 12);
  t.ok(sent.every((s) => s.eventId === 'occurrence:2026-12-01T09:00' && s.content.to === s.email && s.content.occurrence === s.eventId), 'the occurrence as the event id, the contact in the template');
  t.match(await occurrences(h, 'slow'), [{ status: 'done', decided: 12, outcomes: { sent: 12 } }]);
  const decided = await h.db().all<{ n: bigint }>("SELECT count(*) AS n FROM flow_decisions WHERE flow_id = 'slow'");
  t.equal(Number(decided[0]!.n), 12, 'one decision per member');
});

t.test('late: skipped with why after the grace hour, sent within it; a recurring flow does not catch up; caps across occurrences', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 10, 30));
  const h = await startApp(t, { clock });
  await h.createOrg('acme', { timeZone: 'UTC' });
  await importContacts(h, [{ email_address: 'ada@example.com', timezone: 'Asia/Tokyo' }, { email_address: 'bob@example.com' }, { email_address: 'cy@example.com', timezone: 'America/New_York' }]);
  await putQuery(h, 'segments', 'everyone', EVERYONE);
  await startSend(h, { id: 'late', schedule: { at: '2026-12-01T09:00', timeZone: 'org' } });
  await startSend(h, { id: 'grace', schedule: { at: '2026-12-01T09:45', timeZone: 'org' } });
  await startSend(h, { id: 'zones', schedule: { at: '2026-12-01T09:00', timeZone: 'contact' } });
  await startSend(h, { id: 'daily', schedule: { every: 'day', time: '09:00', timeZone: 'org' }, frequencyCap: { maxSends: 1, withinSeconds: 2 * 86_400 - 60 } });
  await tick(h);
  t.match(await occurrences(h, 'late'), [{ occurrence: '2026-12-01T09:00', status: 'skipped', members: 0, reason: /had passed by more than 60 minutes/ }]);
  t.match((await h.admin('GET', '/admin/v1/orgs/acme/flows/late')).json().lastError, /occurrence 2026-12-01T09:00 not sent/);
  t.match(await occurrences(h, 'grace'), [{ status: 'done', outcomes: { sent: 3 } }], '45 minutes late: sent');
  t.match(await occurrences(h, 'zones'), [{ status: 'sending', members: 3, missed: 2, reason: /2 members were due more than the grace/ }], 'Tokyo (00:00 UTC) and UTC (09:00) missed, New York to come');
  t.same(await occurrences(h, 'daily'), [], "today's 09:00 had passed when it went live");
  const byFlow = () => outbox(h).reduce<Record<string, number>>((n, s) => ({ ...n, [s.flowId]: (n[s.flowId] ?? 0) + 1 }), {});
  t.same(byFlow(), { grace: 3 });
  clock.set(Date.UTC(2026, 11, 1, 14, 0));
  await tick(h);
  t.same(byFlow(), { grace: 3, zones: 1 }, 'New York at its 09:00');
  t.same(outbox(h).filter((s) => s.flowId === 'zones').map((s) => s.email), ['cy@example.com']);

  // Three days without a tick (the service down): those days are not caught up, the next is sent.
  clock.set(Date.UTC(2026, 11, 4, 12, 0));
  await tick(h);
  t.same(await occurrences(h, 'daily'), []);
  for (const day of [5, 6, 7]) {
    clock.set(Date.UTC(2026, 11, day, 9, 0));
    await tick(h);
  }
  t.same(
    (await occurrences(h, 'daily')).map((o) => [o.occurrence, o.outcomes]),
    [
      ['2026-12-07T09:00', { sent: 3 }],
      ['2026-12-06T09:00', { frequency_capped: 3 }],
      ['2026-12-05T09:00', { sent: 3 }],
    ],
    "the flow's cap of one per two days holds across occurrences",
  );
});

t.test('hostile definitions are refused with the member named; a DST gap is sent when it ends', async (t) => {
  const clock = new ManualClock(Date.UTC(2026, 2, 8, 6, 59));
  const h = await startApp(t, { clock });
  await h.createOrg('acme', { timeZone: 'America/New_York' });
  await h.createOrg('beta');
  await importContacts(h, [{ email_address: 'ada@example.com', first_name: 'Ada' }]);
  await putQuery(h, 'segments', 'everyone', EVERYONE);
  await putQuery(h, 'segments', 'vips', EVERYONE, 'beta');
  // A segment returning one contact four ways, a non-address and NULL: one member.
  await putQuery(h, 'segments', 'messy', `SELECT upper(email_address) AS email FROM profiles UNION ALL SELECT email_address FROM profiles
    UNION ALL SELECT ' ' || email_address || ' ' FROM profiles UNION ALL SELECT first_name FROM profiles UNION ALL SELECT NULL FROM profiles`);
  const at = { at: '2026-12-01T09:00', timeZone: 'org' };
  const base = { id: 'x', name: 'x', category: 'scheduled', audience: { segment: 'everyone' }, schedule: at, message: OUTBOX };
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['no such day', { schedule: { ...at, at: '2026-02-30T09:00' } }, '/schedule/at'],
    ['hour 24', { schedule: { ...at, at: '2026-12-01T24:00' } }, '/schedule/at'],
    ['an offset', { schedule: { ...at, at: '2026-12-01T09:00+01:00' } }, '/schedule'],
    ['a zone name instead of org/contact', { schedule: { ...at, timeZone: 'Europe/Lisbon' } }, '/schedule'],
    ['a recurring schedule on a scheduled flow', { schedule: { every: 'day', time: '09:00', timeZone: 'org' } }, '/schedule'],
    ['weekly without a weekday', { category: 'recurring', schedule: { every: 'week', time: '09:00', timeZone: 'org' } }, '/schedule/weekday'],
    ['daily with a weekday', { category: 'recurring', schedule: { every: 'day', weekday: 'monday', time: '09:00', timeZone: 'org' } }, '/schedule/weekday'],
    ['minute 60', { category: 'recurring', schedule: { every: 'day', time: '23:60', timeZone: 'org' } }, '/schedule/time'],
    ['endsOn before startsOn', { category: 'recurring', schedule: { every: 'day', time: '09:00', timeZone: 'org', startsOn: '2026-12-02', endsOn: '2026-12-01' } }, '/schedule/endsOn'],
    ['a rate of 0', { sendRatePerSecond: 0 }, '/sendRatePerSecond'],
    ['a huge rate', { sendRatePerSecond: 1e9 }, '/sendRatePerSecond'],
    ['a fractional rate', { sendRatePerSecond: 2.5 }, '/sendRatePerSecond'],
    ['a rate as text', { sendRatePerSecond: '100' }, '/sendRatePerSecond'],
    ["another org's segment", { audience: { segment: 'vips' } }, '/audience/segment'],
    ['a prototype name as segment', { audience: { segment: 'constructor' } }, '/audience/segment'],
    ['a path as segment', { audience: { segment: '../beta/segments/vips' } }, '/audience/segment'],
    ['a trigger on a scheduled flow', { trigger: 'booking_completed' }, '/trigger'],
    ['a triggered flow with an audience', { category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'x', schedule: undefined }, '/audience'],
    ['no audience', { audience: undefined }, '/audience'],
    ['no message', { message: undefined }, '/message'],
    ['a member named constructor', { schedule: { ...at, constructor: 'x' } }, '/schedule/constructor'],
  ];
  for (const [what, change, path] of cases) {
    const res = await h.admin('POST', '/admin/v1/orgs/acme/flows', { ...base, ...change });
    t.equal(res.statusCode, 422, what);
    t.ok((res.json().errors as Array<{ path: string }>).some((e) => e.path === path), `${what}: ${path} in ${JSON.stringify(res.json().errors)}`);
  }
  // __proto__ as a member: refused before anything reads it.
  const proto = await h.app.inject({
    method: 'POST',
    url: '/admin/v1/orgs/acme/flows',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    payload: JSON.stringify(base).replace('"schedule":{', '"schedule":{"__proto__":{"every":"day"},'),
  });
  t.equal(proto.statusCode, 400, proto.body);
  t.same((await h.admin('GET', '/admin/v1/orgs/acme/flows')).json().flows, [], 'nothing created');

  // 02:30 does not exist in New York on 2026-03-08 (02:00 becomes 03:00): sent at 03:00 EDT.
  await startSend(h, { id: 'gap', schedule: { at: '2026-03-08T02:30', timeZone: 'org' } });
  await startSend(h, { id: 'messy', audience: { segment: 'messy' }, schedule: { at: '2026-03-08T02:30', timeZone: 'org' } });
  await tick(h);
  t.equal(outbox(h).length, 0, 'not at 01:59 EST');
  clock.set(Date.UTC(2026, 2, 8, 7, 0));
  await tick(h);
  t.same(outbox(h).map((s) => [s.flowId, s.email]).sort(), [['gap', 'ada@example.com'], ['messy', 'ada@example.com']], 'at 03:00 EDT, once per flow');
  t.match(await occurrences(h, 'gap'), [{ occurrence: '2026-03-08T02:30', dueAt: '2026-03-08T07:00:00.000Z', status: 'done' }]);
  t.match(await occurrences(h, 'messy'), [{ members: 1, decided: 1 }], 'the messy segment: one member');
});
