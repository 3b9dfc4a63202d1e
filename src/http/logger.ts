/**
 * Fastify/pino logger options. Secrets, tokens and e-mails never reach logs: request logs carry the
 * path without its query string (identities live there), and known secret-bearing keys are redacted.
 */
import type { FastifyServerOptions } from 'fastify';
import { stdTimeFunctions } from 'pino';

/**
 * Concrete paths only: a wildcard path (`*.email`) makes pino walk every log line's bindings, which
 * cost ~2 µs per request on the lookup path. The code never logs bodies or events; these are the
 * second line of defence for the names that would carry secrets or e-mails if it ever did.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'partnerSecret',
  'adminKey',
  'token',
  'email',
  'traits',
  'body',
  'event',
];

/** Requests are logged at debug and below only: two lines per event would cost ~15% of collect throughput. */
export function logsRequests(level: string): boolean {
  return level === 'debug' || level === 'trace';
}

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
    // ISO-8601 (UTC) rather than epoch milliseconds: a person reads it, and so does every log shipper.
    timestamp: stdTimeFunctions.isoTime,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    serializers: {
      req: (req: { method: string; url: string; id: string }) => ({
        method: req.method,
        path: req.url.split('?')[0],
        requestId: req.id,
      }),
    },
  };
}
