/**
 * The OpenAPI 3.1 document of the whole service (every role's routes: a partner reading it on an `api`
 * process learns the collect endpoints too), from the operation table and the schemas of schemas/.
 * Built once per process, on first request.
 */
import { type ErrorCode, errorCatalog } from '../core/errors.js';
import { serviceVersion } from '../core/paths.js';
import { schemaComponents } from './components.js';
import { type Auth, type Operation, operations } from './operations.js';

const PROBLEM = {
  type: 'object',
  description: 'RFC 9457 problem details. `type` is a URI reference to the page of `code` served by the service (/problems/<code>).',
  required: ['type', 'title', 'status', 'code'],
  properties: {
    type: { type: 'string', format: 'uri-reference' },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string', description: 'What went wrong and how to fix it' },
    code: { enum: Object.keys(errorCatalog) },
    requestId: { type: 'string', description: 'The Request-Id of the response' },
    errors: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
};

const SECURITY: Record<Exclude<Auth, 'none' | 'partner'>, object> = {
  adminKey: { type: 'http', scheme: 'bearer', description: 'The admin key (ADMIN_KEY, or DATA_DIR/admin.key when generated)' },
  audienceToken: { type: 'http', scheme: 'bearer', description: "An org's Audience API token (POST /admin/v1/orgs/{slug}/tokens)" },
};

/** Answers any path can give, before an operation runs (unknown path or method, malformed or oversized request). */
const EARLY_CODES: ErrorCode[] = ['not_found', 'method_not_allowed', 'invalid_request', 'request_timeout', 'uri_too_long', 'headers_too_large'];

let cached: string | undefined;

/** The document as JSON text. */
export function openApiJson(): string {
  cached ??= JSON.stringify(buildOpenApiDocument());
  return cached;
}

export function buildOpenApiDocument(): Record<string, unknown> {
  const version = serviceVersion();
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of operations) (paths[openApiPath(op.path)] ??= {})[op.method.toLowerCase()] = operation(op);
  return {
    openapi: '3.1.0',
    info: {
      title: 'Audience',
      version,
      description:
        'Collects events from partners, serves contact profiles to personalization services, and runs event-triggered flows. ' +
        'Errors are problem+json with a stable `code`; each code has a page at /problems/<code>. ' +
        `Any request may also be refused before it reaches an operation: ${EARLY_CODES.map((code) => `[\`${code}\`](/problems/${code})`).join(', ')}.`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    tags: [...new Set(operations.map((op) => op.tag))].map((name) => ({ name })),
    paths,
    components: { schemas: { Problem: PROBLEM, ...schemaComponents() }, securitySchemes: SECURITY },
  };
}

function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, '{$1}');
}

function operation(op: Operation): Record<string, unknown> {
  const parameters = [
    ...[...op.path.matchAll(/:(\w+)/g)].map(([, name]) => ({ name, in: 'path', required: true, schema: { type: 'string' } })),
    ...Object.entries(op.query ?? {}).map(([name, q]) => ({ name, in: 'query', required: q.required ?? false, description: q.description, schema: q.schema ?? { type: 'string' } })),
  ];
  const ok = op.ok.contentType ? { [op.ok.contentType]: { schema: { type: 'string' } } } : { 'application/json': { schema: op.ok.schema ?? { type: 'object' } } };
  return {
    tags: [op.tag],
    summary: op.summary,
    operationId: `${op.method.toLowerCase()}${openApiPath(op.path).replace(/[^A-Za-z0-9]+(\w)?/g, (_, c: string | undefined) => (c ?? '').toUpperCase())}`,
    ...(op.auth === 'adminKey' || op.auth === 'audienceToken' ? { security: [{ [op.auth]: [] }] } : { security: [] }),
    ...(op.auth === 'partner' ? { description: 'Authenticated by `partnerId` and `partnerSecret` in the body.' } : {}),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body ? { requestBody: { required: true, ...(op.body.description ? { description: op.body.description } : {}), content: { [op.body.contentType]: { schema: op.body.schema } } } } : {}),
    responses: { [String(op.ok.status)]: { description: op.ok.description, content: ok }, ...errorResponses(op.errors) },
  };
}

/** One response per status, naming every code it can carry (with a link to the code's page). */
function errorResponses(codes: readonly ErrorCode[]): Record<string, unknown> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...codes, 'internal_error' as const])) {
    const status = errorCatalog[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].sort(([a], [b]) => a - b).map(([status, list]) => [
      String(status),
      {
        description: list.map((code) => `[\`${code}\`](/problems/${code}): ${errorCatalog[code].title}`).join('; '),
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      },
    ]),
  );
}
