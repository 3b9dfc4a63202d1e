/**
 * The relay's one request-reply: an HTTP request of an org this process does not keep, sent to the
 * org's subject (`audience.admin.<slug>`, admin-subject.ts) and the owning shard's answer written back
 * unchanged: status, headers (less hop-by-hop ones) and body bytes. Used for the org-database admin
 * paths (relay-org-admin.ts) and the public unsubscribe links (routes/unsubscribe.ts).
 */
import { RequestError, TimeoutError, type NatsConnection } from '@nats-io/transport-node';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import { adminSubject } from './admin-subject.js';
import { DEFAULT_MAX_PAYLOAD, decodeAnswer, encodeRequest, natsHeaderBytes } from './relay-message.js';

/**
 * Default: 30 s. Above TRIGGER_TIMEOUT_MS (10 s, plus the 1 s before an overrunning query is
 * abandoned), so a preview that runs out its own time answers the shard's 422, not a 503 here; and
 * the same as HTTP_REQUEST_TIMEOUT_MS, the time a client is given to send its request.
 */
export const DEFAULT_RELAY_TIMEOUT_MS = 30_000;

/** A shard that is down is usually back (restarted, or another process took its queue group) within a second. */
const RETRY_AFTER = { headers: { 'Retry-After': '1' } };

export interface RelayToShardOptions {
  nc: NatsConnection;
  timeoutMs?: number;
}

export interface ShardCall {
  /** The org whose shard answers: a slug (the caller checked it; anything else throws). */
  slug: string;
  /** The body's bytes as the client sent them. */
  body: Buffer;
  /** How problems name the org to the caller: `org acme` to an admin; nothing that names it to a public link's holder. */
  org: string;
}

export interface ShardRelay {
  /** Room for a body in one message to the shard with this request's headers: max_payload less the headers. */
  room(request: FastifyRequest): number;
  /** Sends the call and writes the shard's answer to `reply`; 503 shard_unavailable when no shard answers. */
  send(request: FastifyRequest, reply: FastifyReply, call: ShardCall): Promise<FastifyReply>;
}

export function relayToShard(options: RelayToShardOptions): ShardRelay {
  const { nc } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_RELAY_TIMEOUT_MS;
  const headersOf = (request: FastifyRequest) => encodeRequest({ method: request.method, url: request.url, requestId: request.id }, request.headers);
  return {
    room: (request) => (nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD) - natsHeaderBytes(headersOf(request)),
    async send(request, reply, call) {
      const subject = adminSubject(call.slug);
      if (subject === undefined) throw new Error(`not a slug: ${JSON.stringify(call.slug)}`);
      let msg;
      try {
        msg = await nc.request(subject, call.body, { timeout: timeoutMs, headers: headersOf(request) });
      } catch (error) {
        throw shardUnavailable(call.org, error, timeoutMs);
      }
      const answer = decodeAnswer(msg.headers, msg.data);
      if (!answer) throw new Error(`the answer on ${subject} is not a relay answer`);
      reply.code(answer.status).headers(answer.headers);
      if (answer.body.byteLength === 0) return reply.send();
      return reply.send(Buffer.from(answer.body.buffer, answer.body.byteOffset, answer.body.byteLength));
    },
  };
}

function shardUnavailable(org: string, error: unknown, timeoutMs: number): AppError {
  if (error instanceof TimeoutError) {
    const detail = `the storage shard that owns ${org} did not answer within ${timeoutMs} ms; a change may or may not have been made: read it back before retrying`;
    return new AppError('shard_unavailable', detail, RETRY_AFTER, { cause: error });
  }
  if (error instanceof RequestError && error.isNoResponders()) {
    return new AppError('shard_unavailable', `no process serves ${org} now (its storage shard is down or starting); nothing was done`, RETRY_AFTER, { cause: error });
  }
  // The connection is closed or draining (this process is shutting down): nothing was sent.
  return new AppError('shard_unavailable', `the storage shard that owns ${org} cannot be reached over NATS from this process`, RETRY_AFTER, { cause: error });
}
