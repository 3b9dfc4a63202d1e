/**
 * Fastify/pino logger options. Secrets, tokens and e-mails never reach logs: request logs carry the
 * path without its query string (identities live there), and known secret-bearing keys are redacted.
 */
import type { FastifyServerOptions } from 'fastify';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  '*.partnerSecret',
  '*.adminKey',
  '*.token',
  '*.email',
  '*.traits',
  'body',
];

export function loggerOptions(level: string): FastifyServerOptions['logger'] {
  return {
    level,
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
