/**
 * The @fastify/swagger options that turn the route schemas (route-schema.ts) into the OpenAPI 3.1
 * document: info, tags, the security schemes, and the components: `Problem` and the JSON Schemas of
 * schemas/. A route schema names schemas/ by their absolute $id (so the service's Ajv resolves them when it
 * validates); the finished document points at the components instead.
 */
import type { SwaggerOptions } from '@fastify/swagger';
import type { ErrorCode } from '../core/errors.js';
import { serviceVersion } from '../core/paths.js';
import { rewriteSchemaRefs, schemaComponents, withoutUnusedComponents } from './components.js';
import { PROBLEM_SCHEMA, SECURITY_SCHEMES, TAGS } from './route-schema.js';

/** Answers any path can give, before an operation runs (unknown path or method, malformed or oversized request). */
const EARLY_CODES: ErrorCode[] = ['not_found', 'method_not_allowed', 'invalid_request', 'request_timeout', 'uri_too_long', 'headers_too_large'];

export function swaggerOptions(): SwaggerOptions {
  return {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Audience',
        version: serviceVersion(),
        description:
          'Collects events from partners, serves contact profiles to personalization services, and runs event-triggered flows. ' +
          'Errors are problem+json with a stable `code`; each code has a page at /problems/<code>. ' +
          `Any request may also be refused before it reaches an operation: ${EARLY_CODES.map((code) => `[\`${code}\`](/problems/${code})`).join(', ')}. ` +
          'This document is generated from the schemas the routes declare (docs/api-reference.md).',
        license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
        contact: { name: 'Audience', url: 'https://audience.dev' },
      },
      servers: [{ url: '/', description: 'The service that serves this document' }],
      tags: TAGS,
      components: {
        schemas: { Problem: PROBLEM_SCHEMA, ...schemaComponents() } as never,
        securitySchemes: SECURITY_SCHEMES as never,
      },
    },
    transformObject: (documentObject) => withoutUnusedComponents(rewriteSchemaRefs((documentObject as { openapiObject: object }).openapiObject) as { components?: { schemas?: Record<string, unknown> } }) as never,
  };
}
