#!/usr/bin/env node
/**
 * `npx audience …`: the admin API from a terminal. Talks HTTP to a running service.
 * AUDIENCE_URL (default http://127.0.0.1:8080) and ADMIN_KEY (default: the contents of
 * ./data/admin.key, as generated on first start) are read once here.
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';

const USAGE = `usage: audience <command> [options]

  org create --slug acme --name Acme [--audience-api] [--rate-limit 50] [--currency '$']
             [--content-fields a,b,c] [--not-found-status 404]
  org list
  org get <slug>
  org update <slug> [--name …] [--audience-api | --no-audience-api] [--rate-limit N] [--currency S]
             [--content-fields a,b] [--not-found-status 404|400]
  org rotate <slug> <staging|production>
  events types <slug> [--env production]
  events samples <slug> [--env production] [--event-type custom_x] [--limit 20]
  quarantine <slug> [--env production] [--limit 100]
  contacts import <slug> <file.csv|file.ndjson>
  token create <slug> --created-by ops@acme.com [--label x] [--expires-at 2026-12-31T00:00:00Z]
  token list <slug>
  token revoke <slug> (--id tok_… | --last3 x9Q | --created-by ops@acme.com)

environment: AUDIENCE_URL (default http://127.0.0.1:8080), ADMIN_KEY (default: ./data/admin.key)`;

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    slug: { type: 'string' },
    name: { type: 'string' },
    'audience-api': { type: 'boolean' },
    'no-audience-api': { type: 'boolean' },
    'rate-limit': { type: 'string' },
    currency: { type: 'string' },
    'content-fields': { type: 'string' },
    'not-found-status': { type: 'string' },
    env: { type: 'string' },
    'event-type': { type: 'string' },
    limit: { type: 'string' },
    'created-by': { type: 'string' },
    label: { type: 'string' },
    'expires-at': { type: 'string' },
    id: { type: 'string' },
    last3: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

const baseUrl = (process.env.AUDIENCE_URL ?? 'http://127.0.0.1:8080').replace(/\/$/, '');

function adminKey(): string {
  if (process.env.ADMIN_KEY) return process.env.ADMIN_KEY;
  try {
    return readFileSync(`${process.env.DATA_DIR ?? './data'}/admin.key`, 'utf8').trim();
  } catch {
    fail('set ADMIN_KEY, or run from the directory whose data/admin.key the service generated');
  }
}

function fail(message: string): never {
  console.error(`audience: ${message}`);
  process.exit(2);
}

/** Org settings from flags (only those given). */
function orgSettings(): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts['audience-api']) body.audienceApi = true;
  if (opts['no-audience-api']) body.audienceApi = false;
  if (opts['rate-limit'] !== undefined) body.rateLimit = Number(opts['rate-limit']);
  if (opts.currency !== undefined) body.currencySymbol = opts.currency;
  if (opts['content-fields'] !== undefined) body.contentFields = opts['content-fields'].split(',').map((f) => f.trim());
  if (opts['not-found-status'] !== undefined) body.notFoundStatus = Number(opts['not-found-status']);
  return body;
}

function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return q.size > 0 ? `?${q}` : '';
}

/** JSON bodies by default; a string body is sent as is with its own content type (imports). */
async function call(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<void> {
  const payload = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
  const res = await fetch(baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${adminKey()}`, ...(payload !== undefined ? { 'content-type': contentType } : {}) },
    ...(payload !== undefined ? { body: payload } : {}),
  }).catch((error: Error) => fail(`cannot reach ${baseUrl}: ${error.message}`));
  const text = await res.text();
  console.log(text.startsWith('{') ? JSON.stringify(JSON.parse(text), null, 2) : text);
  if (!res.ok) process.exit(1);
}

const [noun, verb, ...rest] = positionals;
const slug = noun === 'org' ? rest[0] : verb;

if (opts.help || !noun) {
  console.log(USAGE);
} else if (noun === 'org' && verb === 'create') {
  const body = { slug: opts.slug, name: opts.name ?? opts.slug, ...orgSettings() };
  await call('POST', '/admin/v1/orgs', body);
} else if (noun === 'org' && verb === 'list') {
  await call('GET', '/admin/v1/orgs');
} else if (noun === 'org' && verb === 'get' && slug) {
  await call('GET', `/admin/v1/orgs/${slug}`);
} else if (noun === 'org' && verb === 'update' && slug) {
  await call('PATCH', `/admin/v1/orgs/${slug}`, orgSettings());
} else if (noun === 'org' && verb === 'rotate' && slug && rest[1]) {
  await call('POST', `/admin/v1/orgs/${slug}/credentials/${rest[1]}/rotate`);
} else if (noun === 'events' && verb === 'types' && rest[0]) {
  await call('GET', `/admin/v1/orgs/${rest[0]}/events/types${query({ env: opts.env })}`);
} else if (noun === 'events' && verb === 'samples' && rest[0]) {
  await call('GET', `/admin/v1/orgs/${rest[0]}/events/samples${query({ env: opts.env, eventType: opts['event-type'], limit: opts.limit })}`);
} else if (noun === 'quarantine' && verb) {
  await call('GET', `/admin/v1/orgs/${verb}/quarantine${query({ env: opts.env, limit: opts.limit })}`);
} else if (noun === 'contacts' && verb === 'import' && rest[0] && rest[1]) {
  const file = rest[1];
  const type = file.endsWith('.csv') ? 'text/csv' : file.endsWith('.ndjson') || file.endsWith('.jsonl') ? 'application/x-ndjson' : undefined;
  if (!type) fail('contacts import takes a .csv (with a header row) or .ndjson file');
  await call('POST', `/admin/v1/orgs/${rest[0]}/contacts/import`, readFileSync(file, 'utf8'), type);
} else if (noun === 'token' && verb === 'create' && rest[0]) {
  if (!opts['created-by']) fail('token create needs --created-by <e-mail>');
  await call('POST', `/admin/v1/orgs/${rest[0]}/tokens`, {
    createdBy: opts['created-by'],
    ...(opts.label !== undefined ? { label: opts.label } : {}),
    ...(opts['expires-at'] !== undefined ? { expiresAt: opts['expires-at'] } : {}),
  });
} else if (noun === 'token' && verb === 'list' && rest[0]) {
  await call('GET', `/admin/v1/orgs/${rest[0]}/tokens`);
} else if (noun === 'token' && verb === 'revoke' && rest[0]) {
  const selectors = [opts.id, opts.last3, opts['created-by']].filter((v) => v !== undefined);
  if (selectors.length !== 1) fail('token revoke needs exactly one of --id, --last3, --created-by');
  if (opts.id !== undefined) await call('DELETE', `/admin/v1/orgs/${rest[0]}/tokens/${encodeURIComponent(opts.id)}`);
  else await call('POST', `/admin/v1/orgs/${rest[0]}/tokens/revoke`, opts.last3 !== undefined ? { last3: opts.last3 } : { createdBy: opts['created-by'] });
} else {
  console.error(USAGE);
  process.exit(2);
}
