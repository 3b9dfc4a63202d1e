/**
 * GET /http/v1/status (issue 42): a partner sees what became of its events with its own credentials, for
 * its org environment only, and its counts are the admin API's for the same window. Generated traffic:
 * stored, plan-violating (observe), held for an identity, and invalid events of a few names, sent by two
 * orgs' partners in both environments.
 */
import fc from 'fast-check';
import t from 'tap';
import { customEvent, startTestApp, type TestApp } from '../../helpers/app.js';
import { runCli } from '../../helpers/cli.js';

type Creds = { partnerId: string; partnerSecret: string; writeKey: string };
const basic = (user: string, password = '') => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const status = (h: TestApp, authorization?: string) => h.app.inject({ method: 'GET', url: '/http/v1/status', headers: authorization ? { authorization } : {} });

type Kind = 'stored' | 'violating' | 'held' | 'invalid';
const traffic = fc.array(fc.record({ kind: fc.constantFrom<Kind>('stored', 'violating', 'held', 'invalid'), name: fc.constantFrom('booking_completed', 'cart_updated') }), { minLength: 5, maxLength: 40 });

async function send(h: TestApp, creds: Creds, items: Array<{ kind: Kind; name: string }>, tag: string): Promise<void> {
  for (const [i, { kind, name }] of items.entries()) {
    const properties = kind === 'violating' ? { nights: 'three' } : { nights: 3 };
    const body =
      kind === 'held'
        ? customEvent(creds, { messageId: `${tag}-${i}`, clientId: `anon-${tag}-${i}`, traits: {}, properties: { eventName: name, properties } })
        : customEvent(creds, { messageId: `${tag}-${i}`, traits: { email: `person-${i}@example.com` }, properties: { eventName: name, properties }, ...(kind === 'invalid' ? { sentAt: 12 } : {}) });
    const res = await h.collect(body);
    if (res.statusCode !== (kind === 'invalid' ? 412 : 200)) throw new Error(`${kind}: ${res.statusCode} ${res.body}`);
  }
}

t.test("a partner's status: its own org environment, counted as the admin API counts", async (t) => {
  const h = await startTestApp(t);
  const acme = (await h.createOrg('acme')) as unknown as Record<'production' | 'staging', Creds>;
  const beta = (await h.createOrg('beta')) as unknown as Record<'production' | 'staging', Creds>;
  for (const org of ['acme', 'beta']) {
    for (const name of ['custom_booking_completed', 'custom_cart_updated']) {
      const put = await h.admin('PUT', `/admin/v1/orgs/${org}/events/plans/${name}`, { schema: { type: 'object', properties: { nights: { type: 'integer' } } }, mode: 'observe', environments: ['production', 'staging'] });
      t.equal(put.statusCode, 200);
    }
  }
  const [acmeProd, acmeStaging, betaProd] = fc.sample(traffic, { numRuns: 3, seed: Number(process.env.SEED ?? Date.now() % 100_000) });
  await send(h, acme.production, acmeProd!, 'ap');
  await send(h, acme.staging, acmeStaging!, 'as');
  await send(h, beta.production, betaProd!, 'bp');
  await h.compacted();

  const mine = await status(h, basic(acme.production.partnerId, acme.production.partnerSecret));
  t.equal(mine.statusCode, 200, mine.body);
  type Counts = { accepted: number; stored: number; held: number; quarantined: number; violations: number; reasons: Array<{ reason: string; count: number }> };
  const answer = mine.json() as { org: string; environment: string; events: Array<{ eventName: string; last24Hours: Counts; lastHour: Counts }> };
  t.match(answer, { org: 'acme', environment: 'production' });
  const byWriteKey = (await status(h, basic(acme.production.writeKey))).json();
  t.same({ ...byWriteKey, asOf: '' }, { ...mine.json(), asOf: '' }, 'the write key as the user name answers the same');

  for (const name of ['booking_completed', 'cart_updated']) {
    const sent = acmeProd!.filter((x) => x.name === name);
    const count = (kind: Kind) => sent.filter((x) => x.kind === kind).length;
    const row = answer.events.find((e) => e.eventName === `custom_${name}`);
    const expected = { stored: count('stored') + count('violating'), held: count('held'), quarantined: count('invalid'), violations: count('violating') };
    if (sent.length === 0) {
      t.notOk(row, `no ${name} sent, none listed`);
      continue;
    }
    t.match(row?.last24Hours, { ...expected, accepted: expected.stored + expected.held }, `custom_${name}: what the generator sent`);
    t.match(row?.lastHour, { ...expected, accepted: expected.stored + expected.held }, 'all of it within the hour');
    if (count('violating') > 0) t.ok(row?.last24Hours.reasons.some((r) => r.reason === 'plan_violation /properties/nights type must be integer' && r.count === count('violating')), 'the plan violation among the reasons');
    if (count('invalid') > 0) t.ok(row?.last24Hours.reasons.some((r) => r.reason.startsWith('schema_violation /sentAt') && r.count === count('invalid')), 'the schema violation among the reasons');

    // The admin API's counts for the same window.
    const types = (await h.admin('GET', '/admin/v1/orgs/acme/events/types?env=production')).json().types as Array<{ eventType: string; count: number; violations: number }>;
    const type = types.find((x) => x.eventType === `custom_${name}`);
    t.equal(type?.count ?? 0, expected.stored, 'stored: as events/types counts');
    t.equal(type?.violations ?? 0, expected.violations, 'violations: as events/types counts');
    const pending = (await h.admin('GET', '/admin/v1/orgs/acme/events/pending?env=production&limit=500')).json().events as Array<{ eventType: string }>;
    t.equal(pending.filter((p) => p.eventType === `custom_${name}`).length, expected.held, 'held: as events/pending lists');
    const violations = (await h.admin('GET', `/admin/v1/orgs/acme/events/plans/custom_${name}/violations?env=production`)).json();
    t.equal(violations.events, expected.violations, 'violations: as the plan violations count');
  }
  const quarantine = (await h.admin('GET', '/admin/v1/orgs/acme/quarantine?env=production&limit=500')).json().events as unknown[];
  t.equal(answer.events.reduce((n, e) => n + e.last24Hours.quarantined, 0), quarantine.length, 'quarantined: as the quarantine lists');

  // Nothing of other orgs or environments, no contact data.
  const staging = (await status(h, basic(acme.staging.partnerId, acme.staging.partnerSecret))).json();
  t.match(staging, { org: 'acme', environment: 'staging' });
  t.equal(staging.events.reduce((n: number, e: { last24Hours: { accepted: number } }) => n + e.last24Hours.accepted, 0), acmeStaging!.filter((x) => x.kind !== 'invalid').length, "staging counts staging's events only");
  const betaAnswer = (await status(h, basic(beta.production.partnerId, beta.production.partnerSecret))).json();
  t.equal(betaAnswer.org, 'beta');
  t.equal(betaAnswer.events.reduce((n: number, e: { last24Hours: { accepted: number; quarantined: number } }) => n + e.last24Hours.accepted + e.last24Hours.quarantined, 0), betaProd!.length, "beta's partner sees beta's events only");
  t.notMatch(mine.body, /@example\.com|three|person-|anon-/, 'no address, no property value, no clientId in the answer');
});

t.test('credentials: wrong, mixed, malformed and missing are refused alike; failures and calls are limited', async (t) => {
  const h = await startTestApp(t);
  const acme = (await h.createOrg('acme')) as unknown as Record<'production' | 'staging', Creds>;
  const beta = (await h.createOrg('beta')) as unknown as Record<'production' | 'staging', Creds>;
  const refused = [
    undefined,
    'Bearer x',
    basic(acme.production.partnerId, 'wrong'),
    basic(acme.production.partnerId, beta.production.partnerSecret),
    basic(acme.production.partnerId),
    basic('', acme.production.partnerSecret),
    basic(acme.production.writeKey, 'x'),
    'Basic !!!not-base64',
    `Basic ${'A'.repeat(10_000)}`,
  ];
  for (const [i, authorization] of refused.entries()) {
    const res = await status(h, authorization);
    t.equal(res.statusCode, i < 10 ? 401 : 429, `refused ${i}`);
    t.equal(res.json().code, 'invalid_credentials');
  }
  let limited = 0;
  for (let i = 0; i < 30; i++) if ((await status(h, basic(acme.production.partnerId, acme.production.partnerSecret))).statusCode === 429) limited++;
  t.ok(limited >= 15, `a partner's calls past its burst are limited (${limited} of 30)`);
  t.equal((await status(h, basic(beta.production.partnerId, beta.production.partnerSecret))).statusCode, 200, "another partner's budget is its own");
});

t.test('behind a trusted proxy, a client naming itself the relay in X-Forwarded-For is limited all the same', async (t) => {
  const h = await startTestApp(t, { config: { trustProxy: true } });
  const acme = (await h.createOrg('acme')) as unknown as Record<'production' | 'staging', Creds>;
  const authorization = basic(acme.production.partnerId, acme.production.partnerSecret);
  let limited = 0;
  for (let i = 0; i < 30; i++) {
    const res = await h.app.inject({ method: 'GET', url: '/http/v1/status', headers: { authorization, 'x-forwarded-for': 'nats-relay' } });
    if (res.statusCode === 429) limited++;
  }
  t.ok(limited >= 15, `limited past the burst (${limited} of 30): only a relayed call's socket skips the limit`);
});

t.test('audiencectl partner status: the partner secret from the environment, never the admin key', async (t) => {
  const h = await startTestApp(t);
  const acme = (await h.createOrg('acme')) as unknown as Record<'production' | 'staging', Creds>;
  t.equal((await h.collect(customEvent(acme.production, { messageId: 'cli-1' }))).statusCode, 200);
  await h.compacted();
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  // No admin key anywhere in its environment.
  const env = { PATH: process.env.PATH, AUDIENCE_URL: url, DATA_DIR: '/nonexistent' };
  const byId = await runCli(['partner', 'status', '--partner-id', acme.production.partnerId, '--json'], { ...env, AUDIENCE_PARTNER_SECRET: acme.production.partnerSecret });
  t.equal(byId.code, 0, byId.stderr);
  t.match(JSON.parse(byId.stdout), { org: 'acme', environment: 'production', events: [{ eventName: 'custom_booking_completed', last24Hours: { stored: 1 } }] });
  const byKey = await runCli(['partner', 'status', '--write-key', acme.staging.writeKey, '--json'], env);
  t.equal(byKey.code, 0, byKey.stderr);
  t.match(JSON.parse(byKey.stdout), { org: 'acme', environment: 'staging', events: [] });
  const noSecret = await runCli(['partner', 'status', '--partner-id', acme.production.partnerId], env);
  t.equal(noSecret.code, 2, 'a usage error without the secret');
  t.match(noSecret.stderr, /AUDIENCE_PARTNER_SECRET/);
  const wrong = await runCli(['partner', 'status', '--partner-id', acme.production.partnerId], { ...env, AUDIENCE_PARTNER_SECRET: 'wrong' });
  t.equal(wrong.code, 1, 'refused: exit 1');
});
