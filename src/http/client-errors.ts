/**
 * Errors raised before a request exists, answered as problem+json like every other error:
 * - Node's HTTP parser and timers (Fastify's `clientErrorHandler`): a malformed request line or header
 *   (400), a request line or header block over `maxHeaderSize` (414 / 431), a request not received
 *   within HTTP_REQUEST_TIMEOUT_MS (408). There is no request, so the Request-Id is a fresh one.
 * - Fastify's router (`frameworkErrors`): a path that is not valid percent-encoding (400), a path
 *   parameter over MAX_PATH_PARAM_CHARS (1024) characters (414).
 * They are the client's doing: logged at debug, so a flood of them cannot fill the log.
 */
import { maxHeaderSize } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import { MAX_PATH_PARAM_CHARS } from '../core/route-params.js';
import { sendProblem, toAppError } from './problem.js';
import { answerAndClose, rawProblemResponse } from './raw-problem.js';
import { generateRequestId } from './request-id.js';

/** What Node's parser puts on its errors (`reason` is llhttp's fixed text, never the client's bytes). */
interface ClientError extends Error {
  code?: string;
  reason?: string;
  rawPacket?: Buffer;
}

/** A method token and a space: the chunk starts a request line. */
const REQUEST_LINE_START = /^[A-Z][A-Z-]* /;

/** Fastify calls it with the instance as `this`. */
export function clientErrorHandler(this: FastifyInstance, connectionError: Error, socket: Socket): void {
  const error = connectionError as ClientError;
  // Answered already: the parser reports its error again for each further chunk of the request.
  if (error.code === 'ECONNRESET' || socket.destroyed || socket.writableEnded) return;
  const requestId = generateRequestId();
  const problem = clientProblem(error);
  this.log.debug({ code: error.code, status: problem.status, requestId }, 'client error');
  // As Node's own handler: only when no response on this connection has started (keep-alive), since
  // writing into one would corrupt it.
  const inFlight = (socket as Socket & { _httpMessage?: { headersSent: boolean } })._httpMessage;
  if (socket.writable && !inFlight?.headersSent) answerAndClose(socket, rawProblemResponse(problem, requestId));
  else socket.destroy();
}

function clientProblem(error: ClientError): AppError {
  switch (error.code) {
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new AppError('request_timeout', 'The request was not received in time; send it at once, on a new connection.');
    case 'HPE_HEADER_OVERFLOW':
      return requestLineOverflowed(error.rawPacket)
        ? new AppError('uri_too_long', `The request line is over ${maxHeaderSize} bytes; send long data in a body, not in the URL.`)
        : new AppError('headers_too_large', `The request line and headers together are over ${maxHeaderSize} bytes; send fewer or shorter headers.`);
    default:
      return new AppError('invalid_request', `The request is not valid HTTP/1.1 (${error.code ?? 'parse error'}${error.reason ? `: ${error.reason}` : ''}).`);
  }
}

/**
 * Node counts the request line and headers against one limit and says 431 for both. The chunk that
 * overflowed tells them apart when it starts the request: its request line either never ends in it, or
 * alone fills the limit. A line that began in an earlier chunk is not recognised and stays 431.
 */
function requestLineOverflowed(packet: Buffer | undefined): boolean {
  if (!Buffer.isBuffer(packet) || !REQUEST_LINE_START.test(packet.subarray(0, 32).toString('latin1'))) return false;
  const end = packet.indexOf('\r\n');
  return end === -1 || end >= maxHeaderSize;
}

export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const problem = routerProblem(error);
  if (problem.status >= 500) request.log.error({ err: error }, 'request failed in the router');
  else request.log.debug({ code: error.code, status: problem.status }, 'request refused by the router');
  void sendProblem(reply, request, problem);
}

function routerProblem(error: FastifyError): AppError {
  switch (error.code) {
    case 'FST_ERR_BAD_URL':
      return new AppError('invalid_request', 'The path is not valid percent-encoding of UTF-8: write each reserved or non-ASCII byte of its UTF-8 as %XX (RFC 3986).');
    case 'FST_ERR_MAX_PARAM_LENGTH':
      // app.ts sets the router's maxParamLength: longer than any slug, name, id or link token the service gives out.
      return new AppError('uri_too_long', `A path segment (slug, name, id or link token) is over ${MAX_PATH_PARAM_CHARS} characters: nothing the service gives out is that long; check the URL.`);
    default:
      return toAppError(error);
  }
}
