/**
 * The one error handler: every error leaves as RFC 9457 problem+json with a stable `code`.
 * 5xx answers never carry internals; the cause is logged instead.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, type ErrorCode, errorCatalog } from '../core/errors.js';
import { toProblemDetails } from '../core/schemas.js';
import { type Clock, systemClock } from '../core/context.js';
import { CapacityLog } from './capacity-log.js';

/** Fastify's own parser/limit errors, mapped to catalog codes. */
const fastifyCodes: Record<string, ErrorCode> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid_json',
  FST_ERR_CTP_BODY_TOO_LARGE: 'payload_too_large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported_media_type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid_request',
};

export function sendProblem(reply: FastifyReply, request: FastifyRequest, error: AppError): FastifyReply {
  // Also set here: problems answered before the Request-Id hook runs (router errors, unrouted requests).
  reply.header('Request-Id', request.id);
  for (const [name, value] of Object.entries(error.extra.headers ?? {})) reply.header(name, value);
  return reply.code(error.status).type('application/problem+json').send(problemBody(error, request.id));
}

/** The problem+json body of an error; also built without a reply (answers relayed over NATS). */
export function problemBody(error: AppError, requestId: string): Record<string, unknown> {
  return {
    type: `/problems/${error.code}`,
    title: errorCatalog[error.code].title,
    status: error.status,
    detail: error.detail ?? errorCatalog[error.code].title,
    code: error.code,
    requestId,
    ...error.extra.members,
  };
}

export function toAppError(error: FastifyError | Error): AppError {
  if (error instanceof AppError) return error;
  const fastifyError = error as FastifyError;
  if (fastifyError.validation) {
    return new AppError('invalid_request', fastifyError.message, {
      members: { errors: toProblemDetails(fastifyError.validation as never) },
    });
  }
  if (fastifyError.code === 'ECONNRESET') {
    // Node's "aborted": the connection closed before the whole body arrived (the client went away, or
    // HTTP_REQUEST_TIMEOUT_MS passed and Node answered 408). A client's doing, and nobody reads this
    // answer: a 4xx, so it is not logged as a failure of the service (a slow-body flood made one error
    // line per connection).
    return new AppError('invalid_request', 'The request body ended before it was complete (connection closed or request timeout).');
  }
  const mapped = fastifyError.code ? fastifyCodes[fastifyError.code] : undefined;
  if (mapped) return new AppError(mapped, fastifyError.message);
  // Any other refusal of Fastify's own (it says so with a 4xx) is the request's fault, not a 500.
  if (fastifyError.code?.startsWith('FST_ERR_') && Number(fastifyError.statusCode) >= 400 && Number(fastifyError.statusCode) < 500) {
    return new AppError('invalid_request', fastifyError.message);
  }
  return new AppError('internal_error', undefined, {}, { cause: error });
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /** A route whose body limit is part of its contract: over it, 400 invalid_request with this detail (not 413). */
    bodyTooLarge?: string;
  }
}

export function registerProblemHandlers(app: FastifyInstance, clock: Clock = systemClock): void {
  const capacity = new CapacityLog(clock);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const tooLarge = error.code === 'FST_ERR_CTP_BODY_TOO_LARGE' ? request.routeOptions.config?.bodyTooLarge : undefined;
    const appError = tooLarge ? new AppError('invalid_request', tooLarge) : toAppError(error);
    if (appError.status === 503 && error instanceof AppError) {
      // A capacity answer the docs promise (retry later), not a failure: see capacity-log.ts.
      const line = capacity.answered(appError, orgOf(request));
      if (line) request.log.warn(line, 'answering 503 with Retry-After (logged once until a minute passes without it)');
    } else if (appError.status >= 500) request.log.error({ err: appError.cause ?? error }, 'request failed');
    else if (request.raw.destroyed) request.log.debug({ code: appError.code }, 'request aborted by the client or a timeout');
    return sendProblem(reply, request, appError);
  });
  // The service answers unrouted requests earlier (unrouted.ts); this is for apps built without it.
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, request, new AppError('not_found', `no route ${request.method} ${request.url.split('?')[0]}`)),
  );
}

/** The org a request is about (admin and Audience routes name it in the path), for capacity lines. */
function orgOf(request: FastifyRequest): string | undefined {
  const slug = (request.params as { slug?: unknown } | undefined)?.slug;
  return typeof slug === 'string' ? slug : undefined;
}
