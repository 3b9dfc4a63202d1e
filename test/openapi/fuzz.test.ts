/**
 * Every documented operation, sent requests built from its own schemas (fast-check, a fixed seed, a
 * bounded number of runs each): none answers 500, and every answer is one the document lists for the
 * operation, its body valid against the schema documented for that status and content type (Ajv).
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import fc from 'fast-check';
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';
import { BOOKING_TRIGGER, putQuery, runFlow, startFlow } from '../helpers/flows.js';
import { ROOT } from '../helpers/paths.js';
import { arbitraryOf, type SchemaContext } from './arbitraries.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

type Schema = Record<string, unknown>;
interface Parameter { name: string; in: 'path' | 'query' | 'header'; required?: boolean; schema: Schema }
interface Operation {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Example { params?: Record<string, string>; query?: Record<string, string>; body?: unknown }
interface Document { paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, Schema> } }

const SEED = 20_231_126;
const RUNS = Number(process.env.FUZZ_RUNS ?? 12);
/** Slow by nature (a tar of every database): a few runs. */
const FEW_RUNS = new Set(['getBackup']);

t.test('schema-driven requests: no 500, every answer as documented', async (t) => {
  const h = await startTestApp(t);
  const baseUrl = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const doc = (await (await fetch(`${baseUrl}/openapi.json`)).json()) as Document;
  const credentials = await h.createOrg('acme', { audienceApi: true });
  const token = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'ops@example.com' })).json().token as string;
  // Something behind every list and lookup, so the success answers are checked too: events, a contact,
  // a trigger, a segment, and a flow that has run.
  await putQuery(h, 'triggers', 'booking_completed', BOOKING_TRIGGER);
  await putQuery(h, 'segments', 'vip', "SELECT email_address AS email FROM profiles WHERE email_address LIKE 'vip%'");
  await startFlow(h, { id: 'welcome', scheduleSeconds: 3600, realTime: false, message: { channel: 'outbox', template: { text: 'hi {{ contact.first_name }}' } } });
  for (const [i, email] of ['ada@example.com', 'vip@example.com'].entries()) {
    const sent = await h.collect(customEvent(credentials.production, { messageId: `m${i}`, traits: { email } }));
    if (sent.statusCode !== 200) throw new Error(sent.body);
  }
  await h.collect({ ...customEvent(credentials.production), clientId: 42 });
  await runFlow(h, 'welcome');
  // A scheduled send due this minute, sent to the segment: its occurrences list has one.
  const create = await h.admin('POST', '/admin/v1/orgs/acme/flows', {
    id: 'once', name: 'Once', category: 'scheduled', audience: { segment: 'vip' },
    schedule: { at: new Date().toISOString().slice(0, 16), timeZone: 'org' }, message: { channel: 'outbox', template: { text: 'hi' } },
  });
  if (create.statusCode !== 201 || (await h.admin('POST', '/admin/v1/orgs/acme/flows/once/start')).statusCode !== 200) throw new Error(create.body);
  await h.app.flowsRole!.scheduled.sendDue();
  const known: Record<string, string> = { slug: 'acme', env: 'staging', name: 'booking_completed', id: 'welcome', code: 'schema_violation', writeKey: credentials.staging.writeKey, type: 'track', eventName: 'custom_booking_completed' };
  const tokenId = (await h.admin('POST', '/admin/v1/orgs/acme/tokens', { createdBy: 'revoke@example.com' })).json().id as string;
  const event = (i: number) => customEvent(credentials.production, { messageId: `fuzz-${i}`, traits: { email: 'ada@example.com' } });
  const { partnerId, partnerSecret, ...member } = event(0);
  const definition = (id: string) => ({ id, name: 'Fuzzed', category: 'triggered', entry: 'when_contact_triggers_event', trigger: 'booking_completed', message: { channel: 'outbox', template: { text: 'hi' } } });
  /**
   * A request that should succeed, per operation, mixed in with the generated ones: the schemas alone
   * rarely make a valid event, cursor or SQL, and a success answer is one to check too.
   */
  const examples: Record<string, Example> = {
    createOrg: { body: { slug: 'beta', name: 'Beta' } },
    collectEvent: { body: event(1) },
    collectBatch: { body: { partnerId, partnerSecret, batch: [{ ...member, messageId: 'fuzz-b1' }, { ...member, messageId: 'fuzz-b2' }] } },
    getAudienceContact: { query: { identity: 'email:ada@example.com' } },
    getAudienceContactsBatch: { body: { identities: ['email:ada@example.com', 'user_id:nobody', 'bad'] } },
    getOrgContact: { query: { identity: 'email:ada@example.com' } },
    getSegment: { params: { name: 'vip' } },
    saveTrigger: { body: { sql: BOOKING_TRIGGER } },
    previewTrigger: { body: {} },
    diffTrigger: { body: { sql: BOOKING_TRIGGER } },
    saveSegment: { params: { name: 'vip' }, body: { sql: "SELECT email_address AS email FROM profiles WHERE email_address LIKE 'vip%'" } },
    previewSegment: { params: { name: 'vip' }, body: {} },
    listSegmentVersions: { params: { name: 'vip' } },
    createFlow: { body: definition('second') },
    replaceFlow: { body: definition('welcome') },
    getFlowResults: { query: { from: '2020-01-01T00:00:00Z' } },
    simulateFlow: { body: { identity: 'email:ada@example.com' } },
    listFlowWaits: { query: { identity: 'email:ada@example.com', limit: '10' } },
    listFlowOccurrences: { params: { id: 'once' } },
    previewFlowMessage: { body: { trigger: 'booking_completed', message: { channel: 'outbox', template: { text: 'hi {{ contact.email_address }}' } } } },
    revokeToken: { params: { id: tokenId } },
    putQuarantineAlert: { body: { url: 'http://127.0.0.1:9/hook', threshold: 0.05, minEvents: 100, windowSeconds: 300 } },
    putEventPlan: { body: { schema: { type: 'object', properties: { nights: { type: 'integer' } } }, mode: 'observe', environments: ['production'] } },
    // The tracking API: one message per Segment type, a batch, an import, Jitsu's paths.
    ...Object.fromEntries(
      Object.entries({ Track: { event: 'Clicked' }, Identify: { traits: { email: 'ada@example.com' } }, Page: { name: 'Home' }, Screen: { name: 'Main' }, Group: { groupId: 'g' }, Alias: { previousId: 'a0' } }).flatMap(
        ([type, body]) => [`segment${type}`, `segment${type}Short`].map((id) => [id, { body: { anonymousId: 'a1', ...body } }]),
      ),
    ),
    segmentBatch: { body: { batch: [{ type: 'track', anonymousId: 'a1', event: 'Clicked' }] } },
    segmentBatchShort: { body: { batch: [{ type: 'track', anonymousId: 'a1', event: 'Clicked' }] } },
    segmentImport: { body: { batch: [{ type: 'track', anonymousId: 'a1', event: 'Clicked', timestamp: '2025-01-01T00:00:00Z' }] } },
    jitsuEvent: { params: { type: 'track' }, body: { anonymousId: 'a1', event: 'Clicked' } },
    jitsuServerEvent: { params: { type: 'track' }, body: { anonymousId: 'a1', event: 'Clicked' } },
    analyticsJsBundle: { params: { file: readdirSync(join(ROOT, 'node_modules/@segment/analytics-next/dist/umd')).find((f) => f.includes('.bundle.') && f.endsWith('.js'))! } },
  };

  const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true });
  addFormats(ajv);
  ajv.addFormat('binary', true);
  ajv.addSchema(doc as never, 'openapi.json');
  const validatorOf = (pointer: string) => ajv.getSchema(`openapi.json#${pointer}`) ?? ajv.compile({ $ref: `openapi.json#${pointer}` });
  const escape = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');
  const ctx: SchemaContext = { components: doc.components.schemas };

  const operations = Object.entries(doc.paths).flatMap(([path, ops]) => Object.entries(ops).map(([method, op]) => ({ path, method, op })));
  // Deletions go last, in the order what they delete is named: flows (which name triggers, segments and
  // topics), then the rest, then the org the other operations use.
  const lastly = (o: { method: string; op: { operationId: string } }) => (o.op.operationId === 'deleteOrg' ? 3 : o.op.operationId === 'deleteFlow' ? 1 : o.method === 'delete' ? 2 : 0);
  operations.sort((a, b) => lastly(a) - lastly(b));
  t.ok(operations.length > 40, `every operation (${operations.length})`);

  let requests = 0;
  const statuses = new Map<string, Set<number>>();
  for (const { path, method, op } of operations) {
    const parameters = op.parameters ?? [];
    const pathParams = fc.record(Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, fc.oneof(fc.constant(known[p.name] ?? 'x'), arbitraryOf(p.schema, ctx).map(String))])));
    const query = fc.record(
      Object.fromEntries(parameters.filter((p) => p.in === 'query').map((p) => [p.name, arbitraryOf(p.schema, ctx).map(String)])),
      { requiredKeys: parameters.filter((p) => p.in === 'query' && p.required).map((p) => p.name) },
    );
    const [mediaType, body] = Object.entries(op.requestBody?.content ?? {})[0] ?? [];
    const bodies = body ? arbitraryOf(body.schema, ctx) : fc.constant(undefined);
    const example = examples[op.operationId] ?? {};
    // Half the requests: the example, else the known path parameters and no optional query parameter.
    const requests_ = fc.oneof(
      fc.tuple(pathParams, query, bodies),
      fc.constant<[Record<string, unknown>, Record<string, unknown>, unknown]>([
        { ...Object.fromEntries(parameters.filter((p) => p.in === 'path').map((p) => [p.name, known[p.name] ?? 'x'])), ...example.params },
        example.query ?? {},
        'body' in example ? example.body : body ? {} : undefined,
      ]),
    );
    const scheme = Object.keys(op.security?.[0] ?? {})[0];
    const writeKey = `Basic ${Buffer.from(`${credentials.staging.writeKey}:`).toString('base64')}`;
    const partnerBasic = `Basic ${Buffer.from(`${credentials.staging.partnerId}:${credentials.staging.partnerSecret}`).toString('base64')}`;

    await fc.assert(
      fc.asyncProperty(requests_, fc.boolean(), async ([params, q, payload], realPartner) => {
        requests++;
        const url = new URL(path.replace(/\{(\w+)\}/g, (_, name: string) => encodeURIComponent(params[name] as string)), baseUrl);
        for (const [name, value] of Object.entries(q)) url.searchParams.set(name, value as string);
        // Half the partner requests carry the org's real credentials, to get past authentication.
        if (realPartner && payload && typeof payload === 'object' && 'partnerId' in payload) Object.assign(payload, credentials.staging);
        // Half the tracking API requests carry the org's write key.
        const authorization = scheme === 'adminKey' ? `Bearer ${ADMIN_KEY}` : scheme === 'audienceToken' ? `Bearer ${token}` : scheme === 'writeKey' && realPartner ? writeKey : scheme === 'partnerBasic' && realPartner ? partnerBasic : undefined;
        const headers: Record<string, string> = { accept: 'application/json', ...(authorization ? { authorization } : {}) };
        if (mediaType && payload !== undefined) headers['content-type'] = mediaType;
        const res = await fetch(url, {
          method: method.toUpperCase(),
          headers,
          ...(mediaType && payload !== undefined ? { body: mediaType.includes('json') ? JSON.stringify(payload) : String(payload) } : {}),
        });
        const text = Buffer.from(await res.arrayBuffer());
        const what = `${method.toUpperCase()} ${url.pathname}${url.search} → ${res.status} ${text.subarray(0, 300).toString()}`;
        if (res.status === 500) throw new Error(`server error: ${what}`);
        statuses.set(op.operationId, (statuses.get(op.operationId) ?? new Set()).add(res.status));
        const documented = op.responses[String(res.status)];
        if (!documented) throw new Error(`status not documented for ${op.operationId}: ${what}`);
        const type = (res.headers.get('content-type') ?? '').split(';')[0]!.trim();
        const content = documented.content?.[type];
        if (!content) throw new Error(`content type ${type} not documented for ${op.operationId} ${res.status}: ${what}`);
        if (type.endsWith('json')) {
          const validate = validatorOf(`/paths/${escape(path)}/${method}/responses/${res.status}/content/${escape(type)}/schema`);
          if (!validate(JSON.parse(text.toString()))) throw new Error(`${op.operationId} ${res.status} does not match its schema: ${ajv.errorsText(validate.errors)}: ${what}`);
        }
      }),
      { seed: SEED, numRuns: FEW_RUNS.has(op.operationId) ? 2 : RUNS, endOnFailure: true },
    );
  }
  t.pass(`${requests} requests, each answered as documented`);
  const unanswered = operations.map(({ op }) => op.operationId).filter((id) => ![...(statuses.get(id) ?? [])].some((status) => status < 300));
  t.comment(`statuses: ${[...statuses].map(([id, set]) => `${id} ${[...set].sort().join('/')}`).join(', ')}`);
  t.ok(unanswered.length <= operations.length / 10, `most operations succeeded at least once, so their success answers were checked too (never: ${unanswered.join(', ') || 'none'})`);
});
