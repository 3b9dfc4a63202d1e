/**
 * The tracking API of Segment (also RudderStack's paths, which are the same, and Jitsu's /api/s/{type}), so
 * their SDKs send here unchanged (docs/partners.md, "Moving from Segment"). The same collect steps as
 * /http/v1/collect: authenticate (the org environment's write key) → validate (each message turned into
 * this service's events, events/collect/segment-message.ts) → commit or quarantine → answer; a 200
 * `{"success": true}` only once every event is durable in the log, and every failure a 4xx/5xx the SDKs
 * report as an error, never a success that stored nothing.
 * Bodies: JSON whatever the Content-Type says (analytics.js sends text/plain), gzip-encoded or not; Segment's
 * limits, 32 KB per message and 500 KB per batch, after decompression. Browsers call from any origin.
 */
import { PassThrough, type Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { basicCredentials } from '../../http/bearer.js';
import { AppError } from '../../core/errors.js';
import { createCommitStep } from '../../events/collect/commit-step.js';
import { createQuarantineStep } from '../../events/collect/quarantine-step.js';
import { SEGMENT_TYPES, type SegmentType } from '../../events/collect/segment-message.js';
import { isObject } from '../../events/collect/to-log-entry.js';
import { createValidateSegmentStep } from '../../events/collect/validate-segment-step.js';
import { registerJsonBodyParser } from '../../http/json-body.js';
import { toAppError } from '../../http/problem.js';
import { object, operationSchema, validatedAs } from '../../openapi/route-schema.js';
import type { ErrorCode } from '../../core/errors.js';
import { analyticsJsSettings, type CollectorUrls } from './analytics-settings.js';
import type { CollectDeps } from './collect.js';

const MESSAGE_LIMIT_BYTES = 32 * 1024;
const BATCH_LIMIT_BYTES = 500 * 1024;

/** analytics.js's one-letter paths. */
const SHORT: Record<string, SegmentType | 'batch'> = { t: 'track', i: 'identify', p: 'page', s: 'screen', g: 'group', a: 'alias', b: 'batch' };

const ERRORS: ErrorCode[] = ['invalid_json', 'json_too_deep', 'invalid_request', 'invalid_credentials', 'message_rejected', 'payload_too_large', 'unsupported_media_type', 'log_unavailable', 'log_outcome_unknown'];
const SUCCESS = { status: 200, description: 'Every event durable in the log', schema: object({ success: { const: true } }) } as const;
const MESSAGE = { type: 'object', description: 'A Segment message (docs/partners.md maps each member)', additionalProperties: true };

const schemas = {
  message: (type: string, path: string) =>
    operationSchema({
      tag: 'Tracking API (Segment-compatible)', operationId: `segment${path}`, auth: 'writeKey', body: MESSAGE,
      summary: `One ${type} message (at most 32 KB)`,
      description: 'Answered once durable. A message that cannot be stored is kept in quarantine and answered 400 `message_rejected`.',
      ok: SUCCESS, errors: ERRORS,
    }),
  batch: (operationId: string, summary: string) =>
    operationSchema({
      tag: 'Tracking API (Segment-compatible)', operationId, auth: 'writeKey', summary,
      description: 'Atomic: one message that cannot be stored sends every message to quarantine (400 `message_rejected`, the first three reasons in `errors`, every reason with `context.debug: true` on a message).',
      body: object({ batch: { type: 'array', items: MESSAGE, minItems: 1 } }, ['batch'], { additionalProperties: true }),
      ok: SUCCESS, errors: ERRORS,
    }),
  jitsu: operationSchema({
    tag: 'Tracking API (Segment-compatible)', operationId: 'jitsuEvent', auth: 'writeKey', body: MESSAGE,
    summary: "Jitsu's event path (`X-Write-Key`; the part after the key id's colon is the write key)",
    params: { type: 'object', properties: { type: { type: 'string', enum: [...SEGMENT_TYPES] } }, required: ['type'] },
    ok: SUCCESS, errors: ERRORS,
  }),
  settings: operationSchema({
    tag: 'Tracking API (Segment-compatible)', operationId: 'segmentSettings', auth: 'none',
    summary: 'The settings analytics.js loads: this service as its only destination',
    description: '`apiHost` and `protocol` come from PUBLIC_URL; without it, from the address and port the connection reached (answered `Cache-Control: no-store`). Never from Host, X-Forwarded-* or Forwarded.',
    params: { type: 'object', properties: { writeKey: { type: 'string' } }, required: ['writeKey'] },
    ok: { status: 200, description: "analytics.js's project settings", schema: { type: 'object', additionalProperties: true } },
    errors: ['not_found'],
  }),
};

/** `urls`: where the settings analytics.js loads send it (analytics-settings.ts). */
export function registerTrackingRoutes(app: FastifyInstance, deps: CollectDeps, urls: CollectorUrls): void {
  const { ctx, registry, metrics } = deps;
  const validate = createValidateSegmentStep(MESSAGE_LIMIT_BYTES, deps.plans);
  const commit = createCommitStep(deps.log, metrics);
  const keepInQuarantine = createQuarantineStep(deps.log);

  /** Authenticate → validate → commit or quarantine → answer. */
  async function collect(request: FastifyRequest, messages: (body: Record<string, unknown>) => unknown[] | undefined, type: SegmentType | undefined, history = false) {
    const body = request.body;
    if (!isObject(body)) throw new AppError('invalid_request', 'The body must be a JSON object: a Segment message, or {"batch": [messages]}.');
    const who = registry.authenticateWriteKey(presentedWriteKey(request, body));
    if (!who) {
      throw new AppError('invalid_credentials', "No org environment has this write key. Send the write key from the org's credentials as the HTTP Basic user name (no password), as writeKey in the body, or as X-Write-Key.");
    }
    const checked = validate({ body, who, receivedAt: ctx.clock.now(), messages: messages(body), ...(type ? { type } : {}), history });
    if (checked.kind === 'stop') throw checked.problem;
    const done = checked.kind === 'ok' ? await commit(checked.value) : await keepInQuarantine(checked);
    if (done.kind === 'stop') throw done.problem;
    return { success: true };
  }
  const one = (body: Record<string, unknown>) => [body];
  const batch = (body: Record<string, unknown>) => {
    if (!Array.isArray(body.batch)) return undefined;
    // Members take the batch's context and sentAt where they have none (as Segment does).
    return body.batch.map((m) => (isObject(m) ? { ...(isObject(body.context) ? { context: body.context } : {}), ...(body.sentAt ? { sentAt: body.sentAt } : {}), ...m } : m));
  };

  void app.register(async (scope) => {
    // Segment's API reads every body as JSON, whatever its Content-Type (analytics.js sends text/plain,
    // RudderStack's gzip body goes out as application/x-www-form-urlencoded).
    for (const type of ['application/json', 'text/plain', '*']) registerJsonBodyParser(scope, type);
    scope.addHook('preParsing', async (request, _reply, payload) => decoded(request, payload));
    scope.addHook('onSend', async (_request, reply) => {
      reply.header('Access-Control-Allow-Origin', '*');
    });
    scope.addHook('onError', async (_request, _reply, error) => {
      metrics.eventsRejected.inc({ code: toAppError(error).code });
    });
    const route = (bodyLimit: number, schema: object) => ({ bodyLimit, schema, validatorCompiler: validatedAs({ body: null, params: null }) });

    for (const type of SEGMENT_TYPES) {
      scope.post(`/v1/${type}`, route(MESSAGE_LIMIT_BYTES, schemas.message(type, capitalized(type))), (request) => collect(request, one, type));
    }
    for (const [letter, type] of Object.entries(SHORT)) {
      const schema = type === 'batch' ? schemas.batch('segmentBatchShort', 'analytics.js batch (`/v1/b`)') : schemas.message(type, `${capitalized(type)}Short`);
      scope.post(`/v1/${letter}`, route(type === 'batch' ? BATCH_LIMIT_BYTES : MESSAGE_LIMIT_BYTES, schema), (request) =>
        type === 'batch' ? collect(request, batch, undefined) : collect(request, one, type),
      );
    }
    scope.post('/v1/batch', route(BATCH_LIMIT_BYTES, schemas.batch('segmentBatch', 'Up to 500 KB of messages at once, atomically')), (request) => collect(request, batch, undefined));
    scope.post('/v1/import', route(BATCH_LIMIT_BYTES, schemas.batch('segmentImport', 'History: a batch whose events are stored and profiled but never enter a flow')), (request) =>
      collect(request, batch, undefined, true),
    );
    for (const prefix of ['/api/s/', '/api/s/s2s/']) {
      scope.post<{ Params: { type: SegmentType } }>(`${prefix}:type`, route(MESSAGE_LIMIT_BYTES, { ...schemas.jitsu, operationId: prefix.includes('s2s') ? 'jitsuServerEvent' : 'jitsuEvent' }), (request) =>
        collect(request, one, jitsuType(request.params.type)),
      );
    }
    scope.get<{ Params: { writeKey: string } }>('/v1/projects/:writeKey/settings', { schema: schemas.settings }, (request, reply) => {
      if (!registry.authenticateWriteKey(request.params.writeKey)) throw new AppError('not_found', 'No org environment has this write key.');
      return analyticsJsSettings(request, reply, request.params.writeKey, urls);
    });
    // Preflight for browsers sending JSON or X-Write-Key from another origin (Jitsu's browser client).
    scope.options('/v1/*', { schema: { hide: true } }, preflight);
    scope.options('/api/s/*', { schema: { hide: true } }, preflight);
  });
}

function preflight(_request: FastifyRequest, reply: FastifyReply): void {
  void reply
    .code(204)
    .header('Access-Control-Allow-Methods', 'GET, POST')
    .header('Access-Control-Allow-Headers', 'Authorization, Content-Type, Content-Encoding, X-Write-Key')
    .header('Access-Control-Max-Age', '86400')
    .send();
}

/**
 * The write key presented: HTTP Basic's user name (its password when the user name is empty), else
 * X-Write-Key (Jitsu's `id:secret` form: the part after the last colon), else `writeKey` in the body.
 */
function presentedWriteKey(request: FastifyRequest, body: Record<string, unknown>): string {
  const basic = basicCredentials(request.headers.authorization);
  if (basic) return basic.user !== '' ? basic.user : basic.password;
  const header = request.headers['x-write-key'];
  if (typeof header === 'string' && header !== '') return header.slice(header.lastIndexOf(':') + 1);
  return typeof body.writeKey === 'string' ? body.writeKey : '';
}

/** Jitsu posts /api/s/{type}; `type` is validated here (the params schema is documentation only). */
function jitsuType(type: string): SegmentType {
  if ((SEGMENT_TYPES as readonly string[]).includes(type)) return type as SegmentType;
  throw new AppError('invalid_request', `/api/s/${type}: the type must be one of ${SEGMENT_TYPES.join(', ')}`);
}

/** A gzip-encoded body is read decompressed (bodyLimit then bounds what it inflates to); other encodings are refused. */
function decoded(request: FastifyRequest, payload: Readable): Readable {
  const encoding = (request.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
  if (encoding === 'identity') return payload;
  if (encoding !== 'gzip') throw new AppError('unsupported_media_type', `Content-Encoding ${encoding} is not supported; send gzip or no encoding`);
  const out = new PassThrough() as PassThrough & { receivedEncodedLength: number };
  out.receivedEncodedLength = 0;
  const gunzip = createGunzip();
  payload.on('data', (chunk: Buffer) => (out.receivedEncodedLength += chunk.length));
  gunzip.on('error', () => out.destroy(new AppError('invalid_request', 'The body is not valid gzip (Content-Encoding: gzip)')));
  payload.on('error', (error) => out.destroy(error));
  payload.pipe(gunzip).pipe(out);
  return out;
}

function capitalized(text: string): string {
  return text[0]!.toUpperCase() + text.slice(1);
}
