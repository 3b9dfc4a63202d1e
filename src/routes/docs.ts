/**
 * GET /openapi.json, and the API reference at /docs/ (Swagger UI from swagger-ui-dist, served by the
 * service itself: no CDN, no external fonts, the online validator badge off; works offline). Both are
 * public: they describe the API, not any org, and hold no secret.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { openApiJson } from '../openapi/document.js';

const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'";

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Audience API reference</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="swagger-ui.css"></head>
<body><div id="reference"></div><script src="swagger-ui-bundle.js"></script><script src="init.js"></script></body></html>`;

const INIT = `window.ui = SwaggerUIBundle({ url: '../openapi.json', dom_id: '#reference', validatorUrl: null, deepLinking: true, tryItOutEnabled: false });`;

const SWAGGER_UI_DIR = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));

/** Files of swagger-ui-dist the page loads, read once on first request. */
const ASSETS: Record<string, string> = { 'swagger-ui.css': 'text/css; charset=utf-8', 'swagger-ui-bundle.js': 'text/javascript; charset=utf-8' };

export function registerDocsRoutes(app: FastifyInstance): void {
  app.get('/openapi.json', async (_request, reply) => reply.type('application/json').send(openApiJson()));
  app.get('/docs', async (_request, reply) => reply.redirect('/docs/'));
  app.get('/docs/', async (_request, reply) => reply.type('text/html; charset=utf-8').header('Content-Security-Policy', CSP).send(PAGE));
  app.get('/docs/init.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(INIT));
  const cache = new Map<string, Buffer>();
  for (const [name, type] of Object.entries(ASSETS)) {
    app.get(`/docs/${name}`, async (_request, reply) => {
      let body = cache.get(name);
      if (!body) cache.set(name, (body = readFileSync(join(SWAGGER_UI_DIR, name))));
      return reply.type(type).header('Cache-Control', 'public, max-age=3600').send(body);
    });
  }
}
