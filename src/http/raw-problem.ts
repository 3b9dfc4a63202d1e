/**
 * A problem+json answer written straight to a socket, for errors that arrive before Fastify has a
 * request and reply (client-errors.ts, CONNECT in unrouted.ts), and the connection closed after it.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AppError } from '../core/errors.js';
import { problemBody } from './problem.js';

/**
 * How long the rest of a refused request is read and dropped before the connection is closed anyway
 * (a "lingering close", as nginx and Apache do). Closing a socket with unread bytes makes the kernel
 * send a reset instead of a FIN, which discards whatever of the answer is still unsent, and a client
 * still writing its request may report the reset instead of the answer. On loopback the answer is sent
 * before the reset, so tests here do not show the loss; across a network it is lost. 1 s is ample for
 * the rest of a request already on its way, and short enough that a client cannot hold the connection.
 */
const LINGER_MS = 1000;

export function rawProblemResponse(error: AppError, requestId: string): string {
  const body = JSON.stringify(problemBody(error, requestId));
  const headers = {
    ...error.extra.headers,
    'Content-Type': 'application/problem+json; charset=utf-8',
    'Content-Length': String(Buffer.byteLength(body)),
    'Request-Id': requestId,
    Connection: 'close',
  };
  const head = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`).join('');
  return `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status] ?? 'Error'}\r\n${head}\r\n${body}`;
}

/** Writes `answer`, ends the connection, and closes it once the client does or LINGER_MS have passed. */
export function answerAndClose(socket: Duplex, answer: string): void {
  socket.on('error', () => {});
  socket.end(answer);
  setTimeout(() => socket.destroy(), LINGER_MS).unref();
}
