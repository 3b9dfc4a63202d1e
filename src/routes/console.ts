/**
 * The console (src/console, built into dist/console by `npm run build`) at /console/: index.html and
 * the hashed files Vite wrote, read once at start into a map, so a request's path is only ever a key
 * into it. It is public like any web page; every call it makes carries the admin key the user typed.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { extname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.js';
import { projectRoot } from '../core/paths.js';

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'";
/** A web page, not API: left out of /openapi.json. */
const PAGE_SCHEMA = { hide: true };
const TYPES: Record<string, string> = { '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

export function registerConsoleRoutes(app: FastifyInstance, dir = join(projectRoot, 'dist', 'console')): void {
  app.get('/console', { schema: PAGE_SCHEMA }, async (_request, reply) => reply.redirect('/console/'));
  if (!existsSync(join(dir, 'index.html'))) {
    app.get('/console/', { schema: PAGE_SCHEMA }, async () => {
      throw new AppError('not_found', 'The console is not built: run `npm run build` (it writes dist/console).');
    });
    return;
  }
  const index = readFileSync(join(dir, 'index.html'));
  const assets = new Map(
    readdirSync(join(dir, 'assets'))
      .filter((name) => TYPES[extname(name)])
      .map((name) => [name, { body: readFileSync(join(dir, 'assets', name)), type: TYPES[extname(name)]! }]),
  );
  app.get('/console/', { schema: PAGE_SCHEMA }, async (_request, reply) =>
    reply.type('text/html; charset=utf-8').header('Content-Security-Policy', CSP).header('Cache-Control', 'no-store').send(index),
  );
  app.get<{ Params: { file: string } }>('/console/assets/:file', { schema: PAGE_SCHEMA }, async (request, reply) => {
    const asset = assets.get(request.params.file);
    if (!asset) throw new AppError('not_found', 'No such console file.');
    // Vite names each file after its content: it never changes under one name.
    return reply.type(asset.type).header('Cache-Control', 'public, max-age=31536000, immutable').send(asset.body);
  });
}
