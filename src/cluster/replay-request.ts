/**
 * A relayed admin request, answered by the shard's own Fastify app through `inject()`: the same routes,
 * schemas, error handler and admin-key hook as over HTTP. The admin key is checked here first as well,
 * so a NATS client without it reaches no route even if the app were wired without `adminAuth`.
 */
import type { FastifyBaseLogger, FastifyInstance, FastifyRequest, InjectOptions } from 'fastify';
import { AppError } from '../core/errors.js';
import { bearerToken } from '../http/bearer.js';
import { problemBody } from '../http/problem.js';
import { matchesHash } from '../core/secrets.js';
import { orgOfDatabasePath, tokenOfUnsubscribePath } from './admin-subject.js';

/**
 * The socket address of an admin call a storage shard replays from the relay (below,
 * through inject()). No TCP peer has it, and X-Forwarded-For cannot fake it (it is the socket's, not
 * `request.ip`). Its key was checked before the replay, and its address is not the client's: counting
 * it would let failures on one shard throttle every client of every api process.
 */
export const RELAYED_CALL_ADDRESS = 'nats-relay';
/** A partner's delivery status (routes/http/status.ts): relayed to the shard that keeps the org's database. */
const PARTNER_STATUS_PATH = '/http/v1/status';
/** Audience API calls an api process cannot answer itself (`after=`, eligibility): relayed to the org's shard. */
const AUDIENCE_PATH = '/audience/v2/';
import type { RelayAnswer, RelayRequest } from './relay-message.js';

/** Whether the request is one a shard replays from the relay: its socket's address, which no client sets (unlike `request.ip` behind TRUST_PROXY). */
export function isRelayed(request: FastifyRequest): boolean {
  return request.socket.remoteAddress === RELAYED_CALL_ADDRESS;
}

export interface ReplayDeps {
  app: FastifyInstance;
  adminKeyHash: string;
  /** The org sealed in an unsubscribe link's token; undefined for a token that does not open. */
  orgOfLink(token: string): string | undefined;
  /** The org of a partner's Basic credentials (GET /http/v1/status); undefined when they name none. */
  orgOfPartner(authorization: string | undefined): string | undefined;
  /** The org of an Audience API token (`Authorization: Bearer …`); undefined when it names none. */
  orgOfAudienceToken(authorization: string | undefined): string | undefined;
  logger: FastifyBaseLogger;
}

/** Replays `request` (undefined: the message was no relay request) for the org `slug` serves. */
export async function replayRequest(deps: ReplayDeps, slug: string, request: RelayRequest | undefined): Promise<RelayAnswer> {
  if (!request) return problemAnswer(new AppError('invalid_request', 'not an admin relay request'), '');
  const token = tokenOfUnsubscribePath(request.url);
  if (token !== undefined) {
    // A public link: no admin key. The subject names the org, and the token must name the same one,
    // so no publisher reaches another org's consent through this org's subject.
    if (deps.orgOfLink(token) !== slug) return problemAnswer(new AppError('invalid_request', `not an unsubscribe link of org ${slug}`), request.requestId);
    return inject(deps, request);
  }
  const path = request.url.split('?', 1)[0]!;
  const authorization = typeof request.headers.authorization === 'string' ? request.headers.authorization : undefined;
  if (path === PARTNER_STATUS_PATH) {
    // A partner's own credentials: they must name the subject's org, checked here again.
    if (deps.orgOfPartner(authorization) !== slug) return problemAnswer(new AppError('invalid_credentials', `not a partner of org ${slug}`), request.requestId);
    return inject(deps, request);
  }
  if (path.startsWith(AUDIENCE_PATH)) {
    // An Audience API token: it must be the subject's org's, checked here again.
    if (deps.orgOfAudienceToken(authorization) !== slug) return problemAnswer(new AppError('invalid_token', `not a token of org ${slug}`), request.requestId);
    return inject(deps, request);
  }
  const key = bearerToken(request.headers.authorization) ?? '';
  if (!matchesHash(key, deps.adminKeyHash)) {
    return problemAnswer(
      new AppError('invalid_admin_key', 'Send Authorization: Bearer <ADMIN_KEY>.', {
        headers: { 'WWW-Authenticate': 'Bearer realm="audience-admin"' },
      }),
      request.requestId,
    );
  }
  // The subject names the org; a URL for another org or outside the org-database routes (tokens,
  // org CRUD, collect, metrics) is not this endpoint's to answer.
  if (orgOfDatabasePath(request.url) !== slug) {
    return problemAnswer(new AppError('invalid_request', `not an org-database admin path of org ${slug}`), request.requestId);
  }
  return inject(deps, request);
}

async function inject(deps: ReplayDeps, request: RelayRequest): Promise<RelayAnswer> {
  const response = await deps.app.inject({
    method: request.method as InjectOptions['method'],
    url: request.url,
    // Not the client's address: the api process limited the client's failures before relaying.
    remoteAddress: RELAYED_CALL_ADDRESS,
    headers: request.headers,
    ...(request.body.byteLength > 0 ? { payload: Buffer.from(request.body.buffer, request.body.byteOffset, request.body.byteLength) } : {}),
  });
  const shardRequestId = String(response.headers['request-id'] ?? '');
  const ids = { relayedRequestId: request.requestId, requestId: shardRequestId, status: response.statusCode };
  // A 503 is a capacity answer the shard logged itself, once per change (http/capacity-log.ts).
  if (response.statusCode >= 500 && response.statusCode !== 503) deps.logger.warn(ids, 'relayed admin request failed');
  else deps.logger.debug(ids, 'relayed admin request');
  const body = withRequestId(response.headers['content-type'], response.rawPayload, request.requestId);
  return { status: response.statusCode, headers: response.headers as RelayAnswer['headers'], body };
}

export function problemAnswer(error: AppError, requestId: string): RelayAnswer {
  return {
    status: error.status,
    headers: { ...error.extra.headers, 'content-type': 'application/problem+json; charset=utf-8' },
    body: Buffer.from(JSON.stringify(problemBody(error, requestId))),
  };
}

/**
 * A problem body names the request it answers; the client knows the api process's Request-Id, so the
 * shard's own id (in its logs, next to `relayedRequestId`) is replaced by it.
 */
function withRequestId(contentType: unknown, body: Buffer, requestId: string): Buffer {
  if (typeof contentType !== 'string' || !contentType.startsWith('application/problem+json') || requestId === '') return body;
  try {
    const problem: unknown = JSON.parse(body.toString('utf8'));
    if (typeof problem !== 'object' || problem === null || !('requestId' in problem)) return body;
    return Buffer.from(JSON.stringify({ ...problem, requestId }));
  } catch {
    return body;
  }
}
