/**
 * Everything the service hands out works in every route that takes it back (issue 37): org slugs, topics,
 * trigger and segment names, flow ids and names, e-mail addresses, write keys, token ids, erasure ids,
 * event types, cursors, unsubscribe links and problem pages — each made at generated lengths and
 * characters (fast-check, the longest first) through the API, then walked through every documented
 * operation that takes it in its path or query. No answer may be 404, 414 or 5xx: the value is the
 * service's own. The walk addresses operations by their operationId in /openapi.json, and the test fails
 * when an operation with a path or query parameter is neither walked nor named below as taking nothing the
 * service hands out.
 */
import fc from 'fast-check';
import t from 'tap';
import type { LightMyRequestResponse } from 'fastify';
import { errorCatalog } from '../../src/core/errors.js';
import { ADMIN_KEY, startTestApp, type TestApp } from '../helpers/app.js';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { emailAddress, flowId, orgSlug, topicName } from '../helpers/issued-values.js';

/** Operations with parameters that take nothing the service issues, and why. */
const TAKES_NOTHING_ISSUED: Record<string, string> = {
  jitsuEvent: "`type` is one of Segment's message types, a fixed list",
  jitsuServerEvent: "`type` is one of Segment's message types, a fixed list",
  analyticsJsBundle: "`file` is one of analytics.js's own chunk names, fixed by the installed build",
};

interface Operation { method: string; path: string }
type Call = { params?: Record<string, string>; query?: Record<string, string>; body?: unknown; headers?: Record<string, string>; expect: number[] };

const SEGMENT_SQL = "SELECT email_address AS email FROM profiles WHERE email_address IS NOT NULL";
const TRAIT_SQL = 'SELECT email_address AS email, order_count AS value FROM profiles';

/** A flow or org name: up to 200 characters of any kind but controls (names are shown, never parsed). */
const displayName = () => fc.string({ unit: 'grapheme', minLength: 1, maxLength: 200 }).map((s) => s.replace(/\p{Cc}/gu, '·')).filter((s) => s.trim().length > 0 && s.length <= 200);
/** A custom event's name, up to its 38 characters, letters, digits, spaces and punctuation. */
const eventName = () => fc.stringMatching(/^[A-Za-z0-9 _.,:;!?'"&%#+/()-]{1,38}$/);

interface Values { slug: string; topic: string; trigger: string; segment: string; flow: string; scheduled: string; name: string; email: string; creator: string; event: string }

const values = fc
  .record({
    slug: orgSlug(),
    topic: topicName(),
    trigger: topicName(),
    segment: topicName(),
    flow: flowId(),
    scheduled: flowId(),
    name: displayName(),
    email: emailAddress(),
    creator: emailAddress().filter((a) => a.length <= 254),
    event: eventName(),
  })
  .filter((v) => v.flow !== v.scheduled);

const LONGEST: Values = {
  slug: `o${'z9_'.repeat(13)}`,
  topic: `t${'_x9'.repeat(21)}`,
  trigger: `g${'9_y'.repeat(21)}`,
  segment: `s${'y_9'.repeat(21)}`,
  flow: `F-_${'aZ9'.repeat(19)}_-0X`,
  scheduled: `-${'Zz_-9'.repeat(12)}0Aa`,
  name: `Ünïcødé 😀 / & ? # %20 <b> ${'n'.repeat(200)}`.slice(0, 200),
  email: `Ab.C+tag-1&x'y=z?^_\`{|}~!#$%*/${'l'.repeat(34)}@${'D'.repeat(63)}.${'e1'.repeat(31)}e.${'f'.repeat(63)}.${'g'.repeat(59)}.cOm`,
  creator: `Op.S+${'o'.repeat(59)}@${'d'.repeat(63)}.${'e'.repeat(63)}.${'f'.repeat(57)}.com`,
  event: `Booked: a "room" & more! (#1) 100% ok`,
};

t.test('every value the service hands out is taken back by every route that takes it', async (t) => {
  t.equal(LONGEST.slug.length, 40);
  t.equal(LONGEST.email.length, 320);
  t.equal(LONGEST.creator.length, 254);
  t.equal(LONGEST.flow.length, 64);
  t.equal(LONGEST.scheduled.length, 64);
  t.equal(LONGEST.name.length, 200);
  const h = await startTestApp(t, { config: { publicUrl: 'https://audience.example.com/a/b' } });
  const doc = (await h.app.inject({ url: '/openapi.json' })).json() as { paths: Record<string, Record<string, { operationId: string; parameters?: Array<{ in: string }> }>> };
  const operations = new Map<string, Operation>();
  const withParameters = new Set<string>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      operations.set(op.operationId, { method: method.toUpperCase(), path });
      if ((op.parameters ?? []).some((p) => p.in === 'path' || p.in === 'query')) withParameters.add(op.operationId);
    }
  }
  const walked = new Set<string>();
  let runs = 0;

  await fc.assert(
    fc.asyncProperty(values, async (v) => {
      runs++;
      await walk(h, v, operations, walked);
    }),
    // The examples count among the runs: the longest values, then four generated sets.
    { numRuns: 5, examples: [[LONGEST]], endOnFailure: true },
  );
  t.equal(runs, 5, 'the longest values, then four generated sets');

  // Problem pages: every problem's `type` is a page.
  const codes = Object.keys(errorCatalog);
  for (const code of codes) {
    const res = await send(h, operations, walked, 'getProblem', { params: { code }, expect: [200] });
    t.equal(res.statusCode, 200, `/problems/${code}`);
  }

  // The console's files, named in its page (when the console is built: `npm run build`).
  const page = await h.app.inject({ url: '/console/' });
  if (page.statusCode === 200) {
    const assets = [...page.body.matchAll(/(?:src|href)="(\/console\/assets\/[^"]+)"/g)].map((m) => m[1]!);
    t.ok(assets.length > 0, 'the console page names its files');
    for (const asset of assets) t.equal((await h.app.inject({ url: asset })).statusCode, 200, asset);
  } else t.comment('the console is not built: its files are not walked');

  const missing = [...withParameters].filter((id) => !walked.has(id) && !(id in TAKES_NOTHING_ISSUED));
  t.same(missing, [], 'every operation with a path or query parameter is walked');
});

/** One documented operation, its path filled with `call.params` (percent-encoded): the status must be one of `expect`. */
async function send(h: TestApp, operations: Map<string, Operation>, walked: Set<string>, operationId: string, call: Call): Promise<LightMyRequestResponse> {
  const op = operations.get(operationId);
  if (!op) throw new Error(`no operation ${operationId} in /openapi.json`);
  const path = op.path.replace(/\{(\w+)\}/g, (_m, name: string) => {
    const value = call.params?.[name];
    if (value === undefined) throw new Error(`${operationId}: no value for {${name}}`);
    return encodeURIComponent(value);
  });
  const query = call.query ? `?${new URLSearchParams(call.query).toString()}` : '';
  const json = call.body !== undefined && typeof call.body !== 'string';
  const res = await h.app.inject({
    method: op.method as 'GET',
    url: `${path}${query}`,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(json ? { 'content-type': 'application/json' } : {}), ...call.headers },
    ...(call.body === undefined ? {} : { payload: json ? JSON.stringify(call.body) : (call.body as string) }),
  });
  walked.add(operationId);
  if (!call.expect.includes(res.statusCode)) {
    throw new Error(`${operationId} ${op.method} ${path.slice(0, 300)}${query.slice(0, 300)}: ${res.statusCode} (expected ${call.expect.join('/')}) ${res.body.slice(0, 400)}`);
  }
  return res;
}

/** Makes each value through the API, then takes it back through every route that accepts it. */
async function walk(h: TestApp, v: Values, operations: Map<string, Operation>, walked: Set<string>): Promise<void> {
  const call = (id: string, c: Call) => send(h, operations, walked, id, c);
  const slug = { slug: v.slug };
  const identity = `email:${v.email}`;

  // The org and its credentials.
  const created = await h.admin('POST', '/admin/v1/orgs', { slug: v.slug, name: v.name, audienceApi: true });
  if (created.statusCode !== 201) throw new Error(`create ${v.slug}: ${created.statusCode} ${created.body}`);
  const credentials = created.json().credentials as Record<'staging' | 'production', { partnerId: string; partnerSecret: string; writeKey: string }>;
  await call('getOrg', { params: slug, expect: [200] });
  await call('updateOrg', { params: slug, body: { name: [...v.name].reverse().join('') || 'x' }, expect: [200] });
  await call('getBackup', { query: { org: v.slug }, expect: [200] });
  await call('getWebhookSecret', { params: slug, expect: [200] });

  // Topics, triggers, segments, traits: names at their longest.
  await call('putTopic', { params: { ...slug, topic: v.topic }, body: { name: v.name, default: 'subscribed' }, expect: [200, 201] });
  await call('listTopics', { params: slug, expect: [200] });
  for (const [kind, name, sql] of [['Trigger', v.trigger, BOOKING_TRIGGER], ['Segment', v.segment, SEGMENT_SQL], ['Trait', v.segment, TRAIT_SQL]] as const) {
    const params = { ...slug, name };
    await call(`save${kind}`, { params, body: { sql }, expect: [200] });
    await call(`save${kind}`, { params, body: { sql: `${sql}\n-- v2` }, expect: [200] });
    await call(`list${kind}s`, { params: slug, expect: [200] });
    await call(`get${kind}`, { params, expect: [200] });
    const first = (await call(`list${kind}Versions`, { params, query: { limit: '1' }, expect: [200] })).json() as { nextCursor: string | null };
    if (!first.nextCursor) throw new Error(`${kind} versions: no next page`);
    await call(`list${kind}Versions`, { params, query: { limit: '1', cursor: first.nextCursor }, expect: [200] });
    await call(`preview${kind}`, { params, body: {}, expect: [200] });
    if (kind === 'Trigger') await call('diffTrigger', { params, body: { sql }, expect: [200] });
  }

  // Flows: the longest id and name, the topic, trigger and segment above; started before the events they take.
  const message = { channel: 'outbox', template: { text: 'hi', link: '{{ unsubscribe_url }}' } };
  const triggered = { id: v.flow, name: v.name, category: 'triggered', entry: 'when_contact_triggers_event', trigger: v.trigger, topic: v.topic, segmentFilter: { segment: v.segment, mode: 'include' }, scheduleSeconds: 3600, realTime: false, exposeEligibility: true, message };
  const flow = { ...slug, id: v.flow };
  await call('createFlow', { params: slug, body: triggered, expect: [201] });
  await call('replaceFlow', { params: flow, body: triggered, expect: [200] });
  await call('startFlow', { params: flow, expect: [200] });

  // Events: the partner's credentials in a body, the write key in a header; then the event types.
  const event = (messageId: string, email: string) => ({
    partnerId: credentials.production.partnerId, partnerSecret: credentials.production.partnerSecret, clientId: `c-${messageId}`, messageId, sentAt: Date.now(),
    type: 'track', event: 'custom', properties: { eventName: 'booking_completed', properties: {} }, traits: { email },
  });
  for (const [i, e] of [event('m1', v.email), { ...event('m2', v.email), properties: { eventName: v.event, properties: {} } }].entries()) {
    const res = await h.collect(e);
    if (res.statusCode !== 200) throw new Error(`collect ${i}: ${res.statusCode} ${res.body}`);
  }
  const basic = `Basic ${Buffer.from(`${credentials.staging.writeKey}:`).toString('base64')}`;
  const tracked = await h.app.inject({ method: 'POST', url: '/v1/track', headers: { authorization: basic, 'content-type': 'application/json' }, payload: JSON.stringify({ anonymousId: 'a1', event: 'Walked' }) });
  if (tracked.statusCode !== 200) throw new Error(`track with the write key: ${tracked.statusCode} ${tracked.body}`);
  await call('segmentSettings', { params: { writeKey: credentials.production.writeKey }, expect: [200] });
  await call('analyticsJs', { params: { writeKey: credentials.production.writeKey }, expect: [200] });
  await h.compacted();
  const types: string[] = [];
  let cursor: string | null = null;
  do {
    const page = (await call('listEventTypes', { params: slug, query: { limit: '1', ...(cursor ? { cursor } : {}) }, expect: [200] })).json() as { types: Array<{ eventType: string }>; nextCursor: string | null };
    types.push(...page.types.map((x) => x.eventType));
    cursor = page.nextCursor;
  } while (cursor);
  const custom = types.find((x) => x === `custom_${v.event}`);
  if (!custom) throw new Error(`custom_${v.event} not among the event types ${JSON.stringify(types)}`);
  // Its tracking plan, named by the event type as listed; an event that breaks it is counted.
  const plan = { ...slug, eventName: custom };
  await call('putEventPlan', { params: plan, body: { schema: { type: 'object', required: ['x'] }, mode: 'observe', environments: ['production'] }, expect: [200] });
  const broke = await h.collect({ ...event('m3', v.email), properties: { eventName: v.event, properties: {} } });
  if (broke.statusCode !== 200) throw new Error(`collect under observe: ${broke.statusCode} ${broke.body}`);
  await h.compacted();
  await call('getEventPlan', { params: plan, expect: [200] });
  await call('listEventPlans', { params: slug, expect: [200] });
  await call('listEventPlanVersions', { params: plan, expect: [200] });
  await call('inferEventPlan', { params: plan, body: { env: 'production' }, expect: [200] });
  const counted = (await call('listEventPlanViolations', { params: plan, query: { env: 'production' }, expect: [200] })).json() as { events: number };
  if (counted.events !== 1) throw new Error(`violations of ${custom}: ${JSON.stringify(counted)}`);
  await call('deleteEventPlan', { params: plan, expect: [200] });
  await call('putQuarantineAlert', { params: slug, body: { url: 'http://127.0.0.1:9/hook', threshold: 0.05, minEvents: 100, windowSeconds: 300 }, expect: [200] });
  await call('getQuarantineAlert', { params: slug, expect: [200] });
  await call('deleteQuarantineAlert', { params: slug, expect: [200] });
  for (const type of types) {
    const samples = (await call('listEventSamples', { params: slug, query: { eventType: type, limit: '1' }, expect: [200] })).json() as { samples?: unknown[]; events?: unknown[] };
    if ((samples.samples ?? samples.events ?? []).length === 0) throw new Error(`no sample of ${type}: ${JSON.stringify(samples)}`);
  }
  for (const env of ['staging', 'production']) {
    await call('getEventActivity', { params: slug, query: { env }, expect: [200] });
    await call('listPendingEvents', { params: slug, query: { env }, expect: [200] });
    await call('listQuarantine', { params: slug, query: { env }, expect: [200] });
  }
  await call('importContacts', { params: slug, headers: { 'content-type': 'text/csv' }, body: `email_address\n${v.creator}\n`, expect: [200] });
  await call('getOrgContact', { params: slug, query: { identity }, expect: [200] });
  await call('putContactConsent', { params: slug, body: { identity, topic: v.topic, status: 'subscribed' }, expect: [200] });

  await call('runFlow', { params: flow, expect: [200] });
  await h.app.flowsRole!.dispatcher!.idle();
  await call('pauseFlow', { params: flow, expect: [200] });
  await call('startFlow', { params: flow, expect: [200] });
  await call('listFlows', { params: slug, expect: [200] });
  await call('getFlow', { params: flow, expect: [200] });
  const sends = (await call('listFlowSends', { params: flow, query: { identity, limit: '1' }, expect: [200] })).json() as { sends: unknown[] };
  if (sends.sends.length !== 1) throw new Error(`sends to ${v.email}: ${JSON.stringify(sends)}`);
  const decisions = (await call('listFlowDecisions', { params: flow, query: { identity, limit: '1' }, expect: [200] })).json() as { decisions: Array<{ outcome: string }>; nextCursor: string | null };
  if (decisions.decisions[0]?.outcome !== 'sent') throw new Error(`decisions for ${v.email}: ${JSON.stringify(decisions)}`);
  await call('listFlowDecisions', { params: flow, query: { limit: '1' }, expect: [200] });
  await call('getFlowResults', { params: flow, expect: [200] });
  await call('getFlowActivity', { params: flow, expect: [200] });
  await call('simulateFlow', { params: flow, body: { identity }, expect: [200] });
  await call('listFlowWaits', { params: flow, query: { identity }, expect: [200] });
  const scheduled = { id: v.scheduled, name: v.name, category: 'scheduled', audience: { segment: v.segment }, schedule: { at: new Date().toISOString().slice(0, 16), timeZone: 'org' }, message };
  await call('createFlow', { params: slug, body: scheduled, expect: [201] });
  await call('startFlow', { params: { ...slug, id: v.scheduled }, expect: [200] });
  await h.app.flowsRole!.scheduled.sendDue();
  await call('listFlowOccurrences', { params: { ...slug, id: v.scheduled }, query: { limit: '1' }, expect: [200] });

  // The unsubscribe link of the contact's message, as a preview renders it.
  const preview = (await call('previewFlowMessage', { params: slug, body: { trigger: v.trigger, message }, expect: [200] })).json() as { rendered: { content?: { link?: string } } | null; error: string | null };
  const link = preview.rendered?.content?.link;
  if (!link?.startsWith('https://audience.example.com/a/b/unsubscribe/')) throw new Error(`no link in the preview: ${JSON.stringify(preview)}`);
  const token = link.slice('https://audience.example.com/a/b/unsubscribe/'.length);
  await call('unsubscribePage', { params: { token }, expect: [200] });
  await call('unsubscribeOneClick', { params: { token }, headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'List-Unsubscribe=One-Click', expect: [200] });

  // Audience API tokens: created for the longest creator, used, revoked by id and by creator.
  const issued = (await call('createToken', { params: slug, body: { createdBy: v.creator, label: v.name.slice(0, 100) }, expect: [201] })).json() as { id: string; token: string };
  await call('listTokens', { params: slug, expect: [200] });
  await call('getAudienceContact', { query: { identity }, headers: { authorization: `Bearer ${issued.token}` }, expect: [200] });
  await call('getAudienceEligibility', { query: { identity, flow: v.flow }, headers: { authorization: `Bearer ${issued.token}` }, expect: [200] });
  await call('revokeToken', { params: { ...slug, id: issued.id }, expect: [200] });
  await call('createToken', { params: slug, body: { createdBy: v.creator }, expect: [201] });
  await call('revokeTokensBySelector', { params: slug, body: { createdBy: v.creator }, expect: [200] });

  // Credentials: a rotated write key is taken at once; a revoked one is gone.
  for (const env of ['staging', 'production']) {
    await call('rotateOrgCredentials', { params: { ...slug, env }, expect: [200] });
    const rotated = (await call('rotateWriteKey', { params: { ...slug, env }, expect: [200] })).json() as { writeKey: string };
    await call('segmentSettings', { params: { writeKey: rotated.writeKey }, expect: [200] });
  }
  await call('revokeWriteKey', { params: { ...slug, env: 'staging' }, expect: [200] });

  // Topics: the longest one is named by the flow (refused, naming it); a spare one goes.
  const inUse = (await call('deleteTopic', { params: { ...slug, topic: v.topic }, expect: [409] })).json() as { code: string; flows: string[] };
  if (inUse.code !== 'topic_in_use' || !inUse.flows.includes(v.flow)) throw new Error(`deleteTopic: ${JSON.stringify(inUse)}`);
  await call('putTopic', { params: { ...slug, topic: 'spare' }, body: { name: v.name, default: 'subscribed' }, expect: [200, 201] });
  await call('deleteTopic', { params: { ...slug, topic: 'spare' }, expect: [200] });

  // Triggers and segments the flows name are refused, naming them; archived, the flows let them go.
  for (const [kind, name] of [['Trigger', v.trigger], ['Segment', v.segment]] as const) {
    const named = (await call(`delete${kind}`, { params: { ...slug, name }, expect: [409] })).json() as { code: string; flows: string[] };
    if (named.code !== 'trigger_in_use' || !named.flows.includes(v.flow)) throw new Error(`delete${kind}: ${JSON.stringify(named)}`);
  }
  await call('deleteFlow', { params: flow, expect: [200] });
  await call('deleteFlow', { params: { ...slug, id: v.scheduled }, expect: [200] });
  await call('listFlows', { params: slug, query: { archived: 'true' }, expect: [200] });
  await call('deleteTrigger', { params: { ...slug, name: v.trigger }, expect: [200] });
  await call('deleteSegment', { params: { ...slug, name: v.segment }, expect: [200] });
  await call('deleteTrait', { params: { ...slug, name: v.segment }, expect: [200] });

  // Erasure: its id, then the org goes.
  const erasure = (await call('eraseContact', { params: slug, body: { identity }, expect: [202] })).json() as { id: string };
  await call('getErasure', { params: { ...slug, id: erasure.id }, expect: [200] });
  await call('listErasures', { params: slug, expect: [200] });
  await call('deleteOrg', { params: slug, expect: [200] });
}
