/**
 * Segment's standard snippet, self-hosted: its only change is the host in the script URL
 * (`https://audience.example.com/analytics.js/v1/<writeKey>/analytics.min.js` for cdn.segment.com's).
 * GET /analytics.js/v1/{writeKey}/analytics.min.js serves analytics.js — @segment/analytics-next's
 * standalone build, the file Segment's CDN serves — with the write key embedded where Segment's CDN
 * embeds it, and before it one line naming this service as its CDN (`analytics._cdn`, which analytics.js
 * reads first; it takes the CDN from the script URL only for https). It then loads its settings
 * (analytics-settings.ts) and its chunks (GET /analytics-next/bundles/{file}) from here, never from Segment.
 * The base is PUBLIC_URL's, else the connection's address (never a request header), as for the settings.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { PartnerRegistry } from '../../control/partner-registry.js';
import { AppError } from '../../core/errors.js';
import { operationSchema } from '../../openapi/route-schema.js';
import { analyticsJsBase, type CollectorUrls } from './analytics-settings.js';

/** Chunks are named by their content's hash: a name serves one content forever. */
const BUNDLE = /^[A-Za-z0-9_-]+\.bundle\.[0-9a-f]{8,}\.js$/;
const WRITE_KEY_PLACEHOLDER = '"__WRITE_KEY__"';

const tag = 'Tracking API (Segment-compatible)' as const;
const schemas = {
  script: operationSchema({
    tag, auth: 'none', operationId: 'analyticsJs', summary: "analytics.js for Segment's standard snippet, served from here",
    description:
      "@segment/analytics-next's standalone build with the write key embedded, loading its settings and chunks from this service (PUBLIC_URL's base, else the address the connection reached: then `Cache-Control: no-store`). " +
      "In Segment's snippet, replace `https://cdn.segment.com` with this service's base URL.",
    params: { type: 'object', properties: { writeKey: { type: 'string', maxLength: 200 } }, required: ['writeKey'] },
    ok: { status: 200, description: 'JavaScript', contentType: 'text/javascript' },
    errors: ['not_found'],
  }),
  bundle: operationSchema({
    tag, auth: 'none', operationId: 'analyticsJsBundle', summary: 'A chunk analytics.js loads',
    params: { type: 'object', properties: { file: { type: 'string', maxLength: 200 } }, required: ['file'] },
    ok: { status: 200, description: 'JavaScript, cached for a year (its name holds its hash)', contentType: 'text/javascript' },
    errors: ['not_found'],
  }),
};

interface Build {
  version: string;
  standalone: string;
  bundles: Map<string, Buffer>;
}

let build: Build | undefined;
/** The installed analytics.js build, read at its first request. */
function analyticsJsBuild(): Build {
  if (build) return build;
  const require = createRequire(import.meta.url);
  const umd = dirname(require.resolve('@segment/analytics-next/dist/umd/standalone.js'));
  const { version } = require('@segment/analytics-next/package.json') as { version: string };
  const bundles = new Map(readdirSync(umd).filter((file) => BUNDLE.test(file)).map((file) => [file, readFileSync(join(umd, file))]));
  build = { version, standalone: readFileSync(join(umd, 'standalone.js'), 'utf8'), bundles };
  return build;
}

export function registerAnalyticsJsRoutes(app: FastifyInstance, deps: { registry: Pick<PartnerRegistry, 'authenticateWriteKey'> }, urls: CollectorUrls): void {
  app.get<{ Params: { writeKey: string } }>('/analytics.js/v1/:writeKey/analytics.min.js', { schema: schemas.script }, (request, reply) => {
    const { writeKey } = request.params;
    if (!deps.registry.authenticateWriteKey(writeKey)) throw new AppError('not_found', 'No org environment has this write key (the one in the snippet, after /analytics.js/v1/).');
    const { version, standalone } = analyticsJsBuild();
    const { base, shared } = analyticsJsBase(request, urls);
    const cdn = `(function(a){if(a&&!a._cdn)a._cdn=${JSON.stringify(base)}})(window[(document.currentScript&&document.currentScript.getAttribute("data-global-segment-analytics-key"))||"analytics"]);`;
    // A write key is base64url (the registry knew it): nothing in it can end the string it goes into.
    const body = `/* analytics.js ${version} (@segment/analytics-next, MIT), served by Audience */\n${cdn}\n${standalone.replace(WRITE_KEY_PLACEHOLDER, JSON.stringify(writeKey))}`;
    return reply
      .header('Content-Type', 'text/javascript; charset=utf-8')
      .header('Cache-Control', shared ? 'public, max-age=300' : 'no-store')
      .send(body);
  });

  app.get<{ Params: { file: string } }>('/analytics-next/bundles/:file', { schema: schemas.bundle }, (request, reply) => {
    const chunk = BUNDLE.test(request.params.file) ? analyticsJsBuild().bundles.get(request.params.file) : undefined;
    if (!chunk) throw new AppError('not_found', `analytics.js has no chunk ${request.params.file.slice(0, 100)}`);
    return reply.header('Content-Type', 'text/javascript; charset=utf-8').header('Cache-Control', 'public, max-age=31536000, immutable').send(chunk);
  });
}
