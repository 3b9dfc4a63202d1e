/**
 * Requests no route takes: 405 with `Allow` when the path exists under other methods, else 404, both
 * problem+json. Answered in `onRequest`, before authentication and before any body is read: Fastify
 * reads the body of an unrouted request before its not-found handler runs, and refuses a QUERY
 * without Content-Type there, so `QUERY /anything` answered 500.
 *
 * CONNECT never reaches Fastify (Node hands it to the server's `connect` listeners and, without one,
 * drops the connection unanswered); it gets the same answer here, then the connection is closed.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.js';
import { sendProblem } from './problem.js';
import { answerAndClose, rawProblemResponse } from './raw-problem.js';
import { generateRequestId } from './request-id.js';

export function registerUnroutedAnswers(app: FastifyInstance): void {
  // Methods some route answers; the others cannot be in any Allow.
  const routed = new Set<string>();
  app.addHook('onRoute', (route) => {
    for (const method of [route.method].flat()) routed.add(method);
  });
  const unrouted = (method: string, url: string): AppError => {
    const path = url.split('?')[0]!;
    const allow = [...routed].filter((m) => app.findRoute({ method: m, url: path }) !== null).sort();
    if (allow.length === 0) return new AppError('not_found', `no route ${method} ${path}`);
    return new AppError('method_not_allowed', `${path} answers ${allow.join(', ')}, not ${method}`, { headers: { Allow: allow.join(', ') } });
  };
  // A callback hook, not an async one: it runs on every request, and a promise per request costs ~1 µs.
  app.addHook('onRequest', (request, reply, done) => {
    if (request.is404) sendProblem(reply, request, unrouted(request.method, request.url));
    else done();
  });
  app.server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    answerAndClose(socket, rawProblemResponse(unrouted('CONNECT', request.url ?? ''), generateRequestId(request)));
    socket.resume();
  });
}
