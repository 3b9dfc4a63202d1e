/**
 * Admin API for trigger and segment SQL (SPEC 7): list with status and errors, PUT a new version, and
 * preview a version (given SQL or the live one) over a window without sending anything.
 * Segments have the same routes under /segments.
 */
import type { FastifyInstance } from 'fastify';
import { PAGE_LIMITS, pageOf, pageRequest, readPage } from '../../../db/paging.js';
import type { Context } from '../../../core/context.js';
import type { OrgStorage } from '../../../db/org-storage.js';
import type { Sql } from '../../../db/sql.js';
import { SendStore } from '../../../reactions/flows/store/send-store.js';
import { AppError } from '../../../core/errors.js';
import { microsToIso, newestVisibleAt } from '../../../events/compaction/visible-at.js';
import type { OrgStore } from '../../../control/org-store.js';
import { FileRefused } from '../../../core/regular-file.js';
import { readAgainAfterKills } from '../../../core/unavailable.js';
import { jsonRow } from '../../../reactions/triggers/json-row.js';
import { QueryFailed, runSandboxed, windowOf, withSandbox } from '../../../reactions/triggers/sandbox.js';
import { failedProblem, refusedProblem } from '../../../reactions/triggers/query-problems.js';
import { type CheckedSql, type QueryKind, SqlRefused } from '../../../reactions/triggers/sql-guard.js';
import { diffContacts } from '../../../reactions/triggers/trigger-diff.js';
import type { QueryVersion, TriggerStore } from '../../../reactions/triggers/trigger-store.js';
import type { TraitValues } from '../../../reactions/triggers/trait-values.js';
import type { FlowStore } from '../../../reactions/flows/store/flow-store.js';
import { validatedAs } from '../../../openapi/route-schema.js';
import { KINDS, PREVIEW_DEFAULT_HOURS, PREVIEW_DEFAULT_ROWS, schemasOf, VERSIONS_KEYSET, versionsQuery } from './triggers-schema.js';

interface PreviewBody {
  sql?: string;
  from?: string;
  to?: string;
  limit?: number;
}

export function registerTriggerRoutes(
  app: FastifyInstance,
  deps: { storage: OrgStorage; ctx: Context; orgs: OrgStore; triggers: TriggerStore; flows: Pick<FlowStore, 'naming'>; traits: Pick<TraitValues, 'changed' | 'status'>; timeoutMs: number },
): void {
  const { storage, orgs, triggers } = deps;
  const sends = new SendStore(storage);

  for (const [plural, kind] of Object.entries(KINDS)) {
    const schemas = schemasOf(plural, kind);
    // A trait's values are computed apart from its versions: when, for how many contacts, why not.
    const describe = (org: string, name: string) => ({
      ...describeQuery(triggers, org, kind, name),
      ...(kind === 'trait' ? { values: deps.traits.status(org, name) ?? null } : {}),
    });
    app.get<{ Params: { slug: string } }>(`/admin/v1/orgs/:slug/${plural}`, { schema: schemas.list }, async (request) => {
      const org = await orgs.get(request.params.slug);
      await triggers.scanOrg(org.slug);
      // Refused files with no recorded version are listed too: that is where a data engineer looks.
      const names = new Set([...triggers.list(org.slug, kind).map((s) => s.name), ...triggers.files.refusedNames(org.slug, kind)]);
      return {
        [plural]: [...names].sort((a, b) => a.localeCompare(b)).map((name) => describe(org.slug, name)),
        folderError: triggers.files.folderRefusal(org.slug, kind) ?? null,
      };
    });

    app.get<{ Params: { slug: string; name: string } }>(`/admin/v1/orgs/:slug/${plural}/:name`, { schema: schemas.get }, async (request) => {
      const org = await orgs.get(request.params.slug);
      await triggers.refresh(org.slug, kind, request.params.name);
      const state = triggers.get(org.slug, kind, request.params.name);
      if (!state && !triggers.files.refusal(org.slug, kind, request.params.name)) throw new AppError('trigger_not_found', `no ${kind} "${request.params.name}"`);
      return { ...describe(org.slug, request.params.name), sql: state?.live?.sql ?? state?.latest.sql ?? null };
    });

    // Every version, newest first, with what each fired: the trigger rows flows decided on, and the sends.
    // Paged: a file saved in a loop makes a version each time, each with up to 100,000 characters of SQL.
    app.get<{ Params: { slug: string; name: string }; Querystring: { limit?: string; cursor?: string } }>(
      `/admin/v1/orgs/:slug/${plural}/:name/versions`,
      { schema: schemas.versions, validatorCompiler: validatedAs({ querystring: versionsQuery }) },
      async (request) => {
        const org = await orgs.get(request.params.slug);
        const { name } = request.params;
        const page = pageRequest(request.query, PAGE_LIMITS.versions, ['versions', org.slug, kind, name], VERSIONS_KEYSET);
        const db = storage.org(org.slug);
        const rows = await readPage<{ version: number; hash: string; sql: string; status: string; error: string | null; created_at: Date }>(
          db,
          { select: 'version, hash, sql, status, error, created_at', from: 'trigger_versions', where: 'org = $1 AND kind = $2 AND name = $3', params: [org.slug, kind, name], keyset: VERSIONS_KEYSET },
          page,
        );
        if (rows.length === 0 && !page.after) throw new AppError('trigger_not_found', `no ${kind} "${name}"`);
        // Counted for this page's versions only: one pass over the decisions' trigger_hash column.
        const fired = kind === 'trigger' && rows.length > 0 ? await sends.firedByTrigger(org.slug, rows.map((r) => r.hash)) : new Map<string, { decided: bigint; sent: bigint }>();
        const { items, nextCursor } = pageOf(
          rows,
          page,
          (r) => ({
            version: r.version,
            hash: r.hash,
            status: r.status === 'valid' || r.status === 'deleted' ? r.status : 'refused',
            error: r.error,
            committedAt: r.created_at.toISOString(),
            sql: r.sql,
            ...(kind === 'trigger' ? { fired: { rows: Number(fired.get(r.hash)?.decided ?? 0), sent: Number(fired.get(r.hash)?.sent ?? 0) } } : {}),
          }),
          VERSIONS_KEYSET,
        );
        return { versions: items, nextCursor };
      },
    );

    app.put<{ Params: { slug: string; name: string }; Body: { sql: string } }>(
      `/admin/v1/orgs/:slug/${plural}/:name`,
      { schema: schemas.put },
      async (request) => {
        const org = await orgs.get(request.params.slug);
        let version: QueryVersion;
        try {
          version = await triggers.put(org.slug, kind, request.params.name, request.body.sql);
        } catch (error) {
          if (error instanceof FileRefused) throw new AppError('query_file_refused', `${error.message}: fix this in QUERIES_DIR (the service never writes through a link, nor replaces a folder) and save again.`);
          throw error;
        }
        if (version.status === 'invalid') {
          throw new AppError('invalid_trigger', version.error ?? 'refused', {
            members: { name: request.params.name, version: version.version, reason: version.error, liveVersion: triggers.live(org.slug, kind, request.params.name)?.version ?? null },
          });
        }
        if (kind === 'trait') deps.traits.changed(org.slug);
        return { name: request.params.name, version: version.version, hash: version.hash, status: 'live' };
      },
    );

    app.delete<{ Params: { slug: string; name: string } }>(`/admin/v1/orgs/:slug/${plural}/:name`, { schema: schemas.delete }, async (request) => {
      const org = await orgs.get(request.params.slug);
      const { name } = request.params;
      const naming = kind === 'trait' ? [] : await deps.flows.naming(org.slug, { kind, name });
      if (naming.length > 0) {
        throw new AppError('trigger_in_use', `flows name ${kind} ${name}: ${naming.join(', ')}; point them at another ${kind} or delete them (DELETE …/flows/{id}) first`, { members: { flows: naming } });
      }
      let deleted: Awaited<ReturnType<TriggerStore['delete']>>;
      try {
        deleted = await triggers.delete(org.slug, kind, name);
      } catch (error) {
        if (error instanceof FileRefused) throw new AppError('query_file_refused', `${error.message}: fix this in QUERIES_DIR (the service removes only files, never through a link) and delete again.`);
        throw error;
      }
      if (!deleted) throw new AppError('trigger_not_found', `no ${kind} "${name}" in org ${org.slug} (GET /admin/v1/orgs/${org.slug}/${plural} lists them)`);
      if (kind === 'trait') deps.traits.changed(org.slug);
      return { name, deleted: true as const, version: deleted.tombstone?.version ?? null };
    });

    app.post<{ Params: { slug: string; name: string }; Body: PreviewBody | undefined }>(
      `/admin/v1/orgs/:slug/${plural}/:name/preview`,
      { schema: schemas.preview },
      async (request) => {
        const org = await orgs.get(request.params.slug);
        const { name } = request.params;
        const body = request.body ?? {};
        // A file saved a moment ago is previewed as saved, not as the last poll saw it.
        if (body.sql === undefined) await triggers.refresh(org.slug, kind, name);
        const live = triggers.live(org.slug, kind, name);
        if (body.sql === undefined && !live) throw new AppError('trigger_not_found', `no valid version of ${kind} "${name}"; send sql to preview one`);
        const checked = body.sql === undefined ? live!.checked : await checkGiven(triggers, body.sql, org.slug, kind);
        const db = storage.org(org.slug);
        const limit = body.limit ?? PREVIEW_DEFAULT_ROWS;
        try {
          // Reads only: read again when another org's runaway query had the storage process killed under it.
          const { start, end, page } = await readAgainAfterKills(org.slug, deps.timeoutMs, () =>
            withSandbox(db, deps.timeoutMs, async (c) => {
              const { start, end } = await windowFor(c, body);
              return { start, end, page: await runSandboxed(c, checked, windowOf(start, end), limit) };
            }),
          );
          return {
            version: body.sql === undefined ? live!.version : null,
            window: { from: microsToIso(start), to: microsToIso(end) },
            count: page.rows.length,
            truncated: page.truncated,
            rows: page.rows.map(jsonRow),
          };
        } catch (error) {
          if (error instanceof QueryFailed) throw failedProblem(error);
          throw error;
        }
      },
    );

    // Contacts are what a trigger fires for; a segment's diff would be its members (not asked for yet).
    if (kind !== 'trigger') continue;
    app.post<{ Params: { slug: string; name: string }; Body: { sql: string; from?: string; to?: string } }>(
      `/admin/v1/orgs/:slug/${plural}/:name/diff`,
      { schema: schemas.diff },
      async (request) => {
        const org = await orgs.get(request.params.slug);
        const { name } = request.params;
        // Against the live version as saved now (a file saved a moment ago included).
        await triggers.refresh(org.slug, kind, name);
        const live = triggers.live(org.slug, kind, name);
        const candidate = await checkGiven(triggers, request.body.sql, org.slug, kind);
        const db = storage.org(org.slug);
        try {
          const { start, end, diff } = await readAgainAfterKills(org.slug, deps.timeoutMs, () =>
            withSandbox(db, deps.timeoutMs, async (c) => {
              const { start, end } = await windowFor(c, request.body);
              return { start, end, diff: await diffContacts(c, candidate, live?.checked, windowOf(start, end)) };
            }),
          );
          return { liveVersion: live?.version ?? null, window: { from: microsToIso(start), to: microsToIso(end) }, ...diff };
        } catch (error) {
          if (error instanceof QueryFailed) throw failedProblem(error);
          throw error;
        }
      },
    );
  }
}

/**
 * The window (from, to] of a preview or diff, epoch µs: default the 24 h before the newest visible event,
 * read on the query's own connection (its snapshot), never queued behind compaction's batches on the
 * org's shared one: after a storage restart those queued for seconds and a preview took 25 s.
 */
async function windowFor(c: Sql, body: { from?: string; to?: string }): Promise<{ start: bigint; end: bigint }> {
  const end = body.to ? BigInt(Date.parse(body.to)) * 1000n : await newestVisibleAt(c);
  const start = body.from ? BigInt(Date.parse(body.from)) * 1000n : end - BigInt(PREVIEW_DEFAULT_HOURS * 3600) * 1_000_000n;
  if (start >= end) throw new AppError('invalid_request', 'from must be before to: the window is (from, to]');
  return { start, end };
}

/** Checks SQL given in a body; a refusal is 422 invalid_trigger with the reason. */
async function checkGiven(triggers: TriggerStore, sql: string, org: string, kind: QueryKind): Promise<CheckedSql> {
  try {
    return await triggers.check(sql, org, kind);
  } catch (error) {
    if (error instanceof SqlRefused) throw refusedProblem(error);
    throw error;
  }
}

/** A refused file (`file_refused`) is reported over its recorded versions: the live one, if any, stays live. */
function describeQuery(triggers: TriggerStore, org: string, kind: QueryKind, name: string) {
  const state = triggers.get(org, kind, name);
  const refused = triggers.files.refusal(org, kind, name);
  const { latest, live } = state ?? {};
  return {
    name,
    status: refused ? 'file_refused' : latest?.status === 'valid' ? 'live' : live ? 'live_previous_version' : 'invalid',
    liveVersion: live?.version ?? null,
    liveHash: live?.hash ?? null,
    latestVersion: latest?.version ?? null,
    error: refused ?? latest?.error ?? null,
    committedAt: latest ? new Date(latest.committedAt).toISOString() : null,
  };
}
