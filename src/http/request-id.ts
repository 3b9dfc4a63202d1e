/**
 * Every response carries `Request-Id` (SPEC 6.2), also echoed in problem bodies as `requestId`. An
 * incoming `Request-Id` (set by a load balancer or the caller, to follow one request across systems) is
 * kept when it is a plausible id; anything else — too long, spaces, control characters, a repeated
 * header — is replaced by a fresh UUID, so a client cannot write arbitrary text into our logs.
 */
import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { FastifyInstance } from 'fastify';

const INCOMING_ID = /^[A-Za-z0-9._:/+=@-]{1,128}$/;

export function generateRequestId(request?: Pick<IncomingMessage, 'headers'>): string {
  const incoming = request?.headers['request-id'];
  return typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : randomUUID();
}

export function registerRequestIdHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    done();
  });
}
