/**
 * The page behind each problem `type` (/problems/<code>): the code's section of docs/errors.md as HTML,
 * and /problems with them all. The pages come from a map built at start-up; a request's code is only
 * ever a key into it, never part of a path.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { marked } from 'marked';
import { AppError } from '../core/errors.js';
import { projectRoot } from '../core/paths.js';
import { operationSchema } from '../openapi/route-schema.js';

const CSP = "default-src 'none'; style-src 'unsafe-inline'";
const STYLE = 'body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}code{background:#f2f2f2;padding:0 .2em}';

const indexSchema = operationSchema({
  tag: 'Operations',
  summary: 'Every problem code, what it means and how to fix it (HTML)',
  operationId: 'listProblems',
  auth: 'none',
  ok: { status: 200, description: 'HTML', contentType: 'text/html' },
  errors: [],
});
const pageSchema = operationSchema({
  tag: 'Operations',
  summary: 'The page a problem `type` points to (HTML)',
  operationId: 'getProblem',
  auth: 'none',
  // Any string: an unknown code is a 404 not_found, like any other unknown page.
  params: { type: 'object', required: ['code'], properties: { code: { type: 'string', description: 'A problem code, e.g. schema_violation' } } },
  ok: { status: 200, description: 'HTML', contentType: 'text/html' },
  errors: ['not_found'],
});

export function registerProblemPages(app: FastifyInstance): void {
  const markdown = readFileSync(join(projectRoot, 'docs', 'errors.md'), 'utf8');
  const pages = new Map<string, string>();
  for (const section of markdown.split(/^(?=## `)/m).slice(1)) {
    const code = /^## `(\w+)`/.exec(section)![1]!;
    pages.set(code, page(code, `${section}\n[All error codes](/problems)`));
  }
  const index = page('Errors', markdown.replace(/^## `(\w+)`/gm, '## [`$1`](/problems/$1)'));

  app.get('/problems', { schema: indexSchema }, async (_request, reply) => reply.type('text/html; charset=utf-8').header('Content-Security-Policy', CSP).send(index));
  app.get<{ Params: { code: string } }>('/problems/:code', { schema: pageSchema }, async (request, reply) => {
    const html = pages.get(request.params.code);
    if (html === undefined) throw new AppError('not_found', 'No such error code; GET /problems lists them all.');
    return reply.type('text/html; charset=utf-8').header('Content-Security-Policy', CSP).send(html);
  });
}

function page(title: string, markdown: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${title} — Audience</title><style>${STYLE}</style></head><body>${marked.parse(markdown, { async: false })}</body></html>`;
}
