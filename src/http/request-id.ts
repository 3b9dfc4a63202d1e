/** Every response carries `Request-Id` (SPEC 6.2), also echoed in problem bodies as `requestId`. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';

export const generateRequestId = (): string => randomUUID();

export function registerRequestIdHeader(app: FastifyInstance): void {
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('Request-Id', request.id);
    done();
  });
}
