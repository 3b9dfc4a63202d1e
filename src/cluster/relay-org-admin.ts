/**
 * API side of the admin relay: an `onRequest` hook for the admin routes. A call on an org-database
 * route (see ORG_DATABASE_SECTIONS) of an org this process does not serve goes to the org's subject
 * over NATS request-reply, and the shard's answer is written back unchanged: status, headers (less
 * hop-by-hop ones) and body bytes. Add it after `adminAuth`, so the admin key is checked here before
 * anything is relayed (the shard checks it again).
 */
import { RequestError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import { adminSubject, orgOfDatabasePath } from './admin-subject.js';
import { readBody } from './read-body.js';
import { DEFAULT_MAX_PAYLOAD, decodeAnswer, encodeRequest, natsHeaderBytes } from './relay-message.js';

/**
 * Default: 30 s. Above TRIGGER_TIMEOUT_MS (10 s, plus the 1 s before an overrunning query is
 * abandoned), so a preview that runs out its own time answers the shard's 422, not a 503 here; and
 * the same as HTTP_REQUEST_TIMEOUT_MS, the time a client is given to send its request.
 */
export const DEFAULT_RELAY_TIMEOUT_MS = 30_000;

/** A shard that is down is usually back (restarted, or another process took its queue group) within a second. */
const RETRY_AFTER = { headers: { 'Retry-After': '1' } };

export interface RelayOrgAdminOptions {
  nc: NatsConnection;
  /** Whether this process answers the org itself (it owns the org's database). */
  isLocal(slug: string): boolean;
  /** Whether the org exists (the control plane, which every process has): an unknown org is a 404 here, not a relay. */
  orgExists(slug: string): boolean;
  timeoutMs?: number;
}

export function relayOrgAdmin(options: RelayOrgAdminOptions) {
  const { nc, isLocal } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_RELAY_TIMEOUT_MS;
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (orgOfDatabasePath(request.routeOptions.url ?? '') !== ':slug') return undefined;
    const slug = (request.params as { slug?: string }).slug ?? '';
    const subject = adminSubject(slug);
    // The route's own schema would refuse it too, but only later: no subject is built from a non-slug.
    if (subject === undefined) throw new AppError('invalid_request', 'slug must match ^[a-z][a-z0-9_]{1,39}$');
    if (isLocal(slug)) return undefined;
    if (!options.orgExists(slug)) throw new AppError('org_not_found', `no org "${slug}"`);

    const headers = encodeRequest({ method: request.method, url: request.url, requestId: request.id }, request.headers);
    const maxPayload = nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
    const room = maxPayload - natsHeaderBytes(headers);
    const body = await readBody(request.raw, room);
    if (body.outcome === 'too_large') {
      throw new AppError(
        'payload_too_large',
        `an admin call on org ${slug} is relayed to its storage shard over NATS, which carries at most ${room} bytes of body here ` +
          `(max_payload ${maxPayload} less the headers): split the import into files under ${room} bytes, or raise max_payload on the NATS servers`,
      );
    }
    let msg;
    try {
      msg = await nc.request(subject, body.body, { timeout: timeoutMs, headers });
    } catch (error) {
      throw shardUnavailable(slug, error, timeoutMs);
    }
    const answer = decodeAnswer(msg.headers, msg.data);
    if (!answer) throw new Error(`the answer on ${subject} is not a relay answer`);
    reply.code(answer.status).headers(answer.headers);
    if (answer.body.byteLength === 0) return reply.send();
    return reply.send(Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength));
  };
}

function shardUnavailable(slug: string, error: unknown, timeoutMs: number): AppError {
  if (error instanceof TimeoutError) {
    const detail = `the storage shard that owns org ${slug} did not answer within ${timeoutMs} ms; a change may or may not have been made: read it back before retrying`;
    return new AppError('shard_unavailable', detail, RETRY_AFTER, { cause: error });
  }
  if (error instanceof RequestError && error.isNoResponders()) {
    return new AppError('shard_unavailable', `no process serves org ${slug} now (its storage shard is down or starting); nothing was done`, RETRY_AFTER, { cause: error });
  }
  // The connection is closed or draining (this process is shutting down): nothing was sent.
  return new AppError('shard_unavailable', `the storage shard that owns org ${slug} cannot be reached over NATS from this process`, RETRY_AFTER, { cause: error });
}
