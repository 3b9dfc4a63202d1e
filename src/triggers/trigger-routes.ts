/**
 * Admin API for trigger and segment SQL (SPEC 7): list with status and errors, PUT a new version, and
 * preview a version (given SQL or the live one) over a window without sending anything.
 * Segments have the same routes under /segments.
 */
import type { FastifyInstance } from 'fastify';
import { slugParams, slugSchema } from '../admin/route-params.js';
import type { Context } from '../context.js';
import type { OrgStorage } from '../storage/org-storage.js';
import { AppError } from '../errors.js';
import { microsToIso, newestVisibleAt } from '../compaction/visible-at.js';
import type { OrgStore } from '../orgs/org-store.js';
import { jsonRow } from './json-row.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from './sandbox.js';
import { type QueryKind, SqlRefused } from './sql-guard.js';
import { QUERY_NAME, type TriggerStore } from './trigger-store.js';

const PREVIEW_DEFAULT_HOURS = 24;
const PREVIEW_DEFAULT_ROWS = 100;
/** A preview answers in one HTTP response: at most this many rows, `truncated` when the window had more. */
const PREVIEW_MAX_ROWS = 1000;

const KINDS: Record<string, QueryKind> = { triggers: 'trigger', segments: 'segment' };

const nameParams = {
  type: 'object',
  properties: { slug: slugSchema, name: { type: 'string', pattern: QUERY_NAME.source } },
  required: ['slug', 'name'],
} as const;
const putBody = { type: 'object', additionalProperties: false, required: ['sql'], properties: { sql: { type: 'string', minLength: 1, maxLength: 100_000 } } } as const;
const previewBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    sql: { type: 'string', minLength: 1, maxLength: 100_000 },
    from: { type: 'string', format: 'date-time', description: 'Window start (exclusive). Default: 24 h before the newest event' },
    to: { type: 'string', format: 'date-time', description: 'Window end (inclusive). Default: the newest visible event' },
    limit: { type: 'integer', minimum: 1, maximum: PREVIEW_MAX_ROWS },
  },
} as const;

interface PreviewBody {
  sql?: string;
  from?: string;
  to?: string;
  limit?: number;
}

export function registerTriggerRoutes(
  app: FastifyInstance,
  deps: { storage: OrgStorage; ctx: Context; orgs: OrgStore; triggers: TriggerStore; timeoutMs: number },
): void {
  const { storage, orgs, triggers } = deps;

  for (const [plural, kind] of Object.entries(KINDS)) {
    app.get<{ Params: { slug: string } }>(`/admin/v1/orgs/:slug/${plural}`, { schema: { params: slugParams } }, async (request) => {
      const org = await orgs.get(request.params.slug);
      await triggers.scanOrg(org.slug);
      return { [plural]: triggers.list(org.slug, kind).map((s) => describe(s.name, s.latest, s.live)) };
    });

    app.get<{ Params: { slug: string; name: string } }>(`/admin/v1/orgs/:slug/${plural}/:name`, { schema: { params: nameParams } }, async (request) => {
      const org = await orgs.get(request.params.slug);
      await triggers.refresh(org.slug, kind, request.params.name);
      const state = triggers.get(org.slug, kind, request.params.name);
      if (!state) throw new AppError('trigger_not_found', `no ${kind} "${request.params.name}"`);
      return { ...describe(state.name, state.latest, state.live), sql: state.live?.sql ?? state.latest.sql };
    });

    // Every version, newest first, with what each fired: the trigger rows flows decided on, and the sends.
    app.get<{ Params: { slug: string; name: string } }>(`/admin/v1/orgs/:slug/${plural}/:name/versions`, { schema: { params: nameParams } }, async (request) => {
      const org = await orgs.get(request.params.slug);
      const rows = await storage.org(org.slug).all<{ version: number; hash: string; sql: string; status: string; error: string | null; created_at: Date; decided: bigint; sent: bigint }>(
        `SELECT v.version, v.hash, v.sql, v.status, v.error, v.created_at, count(d.event_id) AS decided, count(d.event_id) FILTER (d.outcome = 'sent') AS sent
           FROM trigger_versions v
           LEFT JOIN flow_decisions d ON $2 = 'trigger' AND d.trigger_hash = v.hash
          WHERE v.org = $1 AND v.kind = $2 AND v.name = $3
          GROUP BY ALL ORDER BY v.version DESC`,
        [org.slug, kind, request.params.name],
      );
      if (rows.length === 0) throw new AppError('trigger_not_found', `no ${kind} "${request.params.name}"`);
      return {
        versions: rows.map((r) => ({
          version: r.version,
          hash: r.hash,
          status: r.status === 'valid' ? 'valid' : 'refused',
          error: r.error,
          committedAt: r.created_at.toISOString(),
          sql: r.sql,
          ...(kind === 'trigger' ? { fired: { rows: Number(r.decided), sent: Number(r.sent) } } : {}),
        })),
      };
    });

    app.put<{ Params: { slug: string; name: string }; Body: { sql: string } }>(
      `/admin/v1/orgs/:slug/${plural}/:name`,
      { schema: { params: nameParams, body: putBody } },
      async (request) => {
        const org = await orgs.get(request.params.slug);
        const version = await triggers.put(org.slug, kind, request.params.name, request.body.sql);
        if (version.status === 'invalid') {
          throw new AppError('invalid_trigger', version.error ?? 'refused', {
            members: { name: request.params.name, version: version.version, reason: version.error, liveVersion: triggers.live(org.slug, kind, request.params.name)?.version ?? null },
          });
        }
        return { name: request.params.name, version: version.version, hash: version.hash, status: 'live' };
      },
    );

    app.post<{ Params: { slug: string; name: string }; Body: PreviewBody | undefined }>(
      `/admin/v1/orgs/:slug/${plural}/:name/preview`,
      { schema: { params: nameParams, body: previewBody } },
      async (request) => {
        const org = await orgs.get(request.params.slug);
        const { name } = request.params;
        const body = request.body ?? {};
        // A file saved a moment ago is previewed as saved, not as the last poll saw it.
        if (body.sql === undefined) await triggers.refresh(org.slug, kind, name);
        const live = triggers.live(org.slug, kind, name);
        if (body.sql === undefined && !live) throw new AppError('trigger_not_found', `no valid version of ${kind} "${name}"; send sql to preview one`);
        let checked;
        try {
          checked = body.sql === undefined ? live!.checked : await triggers.check(body.sql, org.slug, kind);
        } catch (error) {
          if (error instanceof SqlRefused) throw new AppError('invalid_trigger', error.reason, { members: { reason: error.reason } });
          throw error;
        }
        const db = storage.org(org.slug);
        const end = body.to ? BigInt(Date.parse(body.to)) * 1000n : await db.exclusive(newestVisibleAt);
        const start = body.from ? BigInt(Date.parse(body.from)) * 1000n : end - BigInt(PREVIEW_DEFAULT_HOURS * 3600) * 1_000_000n;
        if (start >= end) throw new AppError('invalid_request', 'from must be before to: the window is (from, to]');
        const limit = body.limit ?? PREVIEW_DEFAULT_ROWS;
        try {
          const page = await withSandbox(db, deps.timeoutMs, (c) => runSandboxed(c, checked, windowOf(start, end), limit));
          return {
            version: body.sql === undefined ? live!.version : null,
            window: { from: microsToIso(start), to: microsToIso(end) },
            count: page.rows.length,
            truncated: page.truncated,
            rows: page.rows.map(jsonRow),
          };
        } catch (error) {
          if (error instanceof QueryFailed) throw new AppError('trigger_query_failed', error.reason);
          throw error;
        }
      },
    );
  }
}

function describe(
  name: string,
  latest: { version: number; hash: string; status: string; error: string | null; committedAt: number },
  live: { version: number; hash: string } | undefined,
) {
  return {
    name,
    status: latest.status === 'valid' ? 'live' : live ? 'live_previous_version' : 'invalid',
    liveVersion: live?.version ?? null,
    liveHash: live?.hash ?? null,
    latestVersion: latest.version,
    error: latest.error,
    committedAt: new Date(latest.committedAt).toISOString(),
  };
}
