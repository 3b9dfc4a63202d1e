/** What the trigger and segment routes (triggers.ts) declare for the document and check in requests (SPEC 7). */
import { type Keyset, PAGE_LIMITS, pageOf, pageQuerySchema } from '../../../db/paging.js';
import { slugSchema } from '../../../core/route-params.js';
import { QUERY_NAME, SQL_MAX_CHARS } from '../../../reactions/triggers/query-files.js';
import type { QueryKind } from '../../../reactions/triggers/sql-guard.js';
import { DIFF_MAX_LISTED } from '../../../reactions/triggers/trigger-diff.js';
import { dateTime, nullable, object, operationSchema, pageOf as pageSchema } from '../../../openapi/route-schema.js';
import { ORG_DATA, pageQueryDoc, SANDBOX, slugOnly, slugParam } from '../schema-parts.js';


export const PREVIEW_DEFAULT_HOURS = 24;
export const PREVIEW_DEFAULT_ROWS = 100;
/** A preview answers in one HTTP response: at most this many rows, `truncated` when the window had more. */
const PREVIEW_MAX_ROWS = 1000;

export const KINDS: Record<string, QueryKind> = { triggers: 'trigger', segments: 'segment', traits: 'trait' };
export const VERSIONS_KEYSET: Keyset = { columns: [{ sql: 'version', kind: 'integer', desc: true }], rowid: 'rowid' };

const nameParams = {
  type: 'object',
  properties: { slug: slugSchema, name: { type: 'string', pattern: QUERY_NAME.source } },
  required: ['slug', 'name'],
} as const;
const putBody = { type: 'object', additionalProperties: false, required: ['sql'], properties: { sql: { type: 'string', minLength: 1, maxLength: SQL_MAX_CHARS } } } as const;
const previewBody = {
  type: 'object',
  additionalProperties: false,
  properties: {
    sql: { type: 'string', minLength: 1, maxLength: SQL_MAX_CHARS },
    from: { type: 'string', format: 'date-time', description: 'Window start (exclusive). Default: 24 h before the newest event' },
    to: { type: 'string', format: 'date-time', description: 'Window end (inclusive). Default: the newest visible event' },
    limit: { type: 'integer', minimum: 1, maximum: PREVIEW_MAX_ROWS },
  },
} as const;

const diffBody = {
  type: 'object',
  additionalProperties: false,
  required: ['sql'],
  properties: {
    sql: { type: 'string', minLength: 1, maxLength: SQL_MAX_CHARS, description: 'The candidate SQL, compared with the live version' },
    from: previewBody.properties.from,
    to: previewBody.properties.to,
  },
} as const;

export const versionsQuery = { type: 'object', properties: pageQuerySchema } as const;

/** A trait's values as last computed (trait-values.ts). */
const traitValues = {
  ...object({ version: nullable('integer'), computedAt: nullable('string', { format: 'date-time' }), contacts: { type: 'integer', minimum: 0 }, tookMs: nullable('integer'), error: nullable('string') }),
  type: ['object', 'null'],
  description: 'Its values as last computed (null: not yet): the version, when, for how many contacts, how long the run took, and why the last computation failed (its values are then kept)',
};

/** What the routes of `triggers`, `segments` or `traits` declare for the document. */
export function schemasOf(plural: string, kind: QueryKind) {
  const Kind = `${kind[0]!.toUpperCase()}${kind.slice(1)}`;
  const Plural = `${Kind}s`;
  const tag = 'Admin: triggers and flows' as const;
  const params = { ...nameParams, properties: { slug: slugParam, name: { ...nameParams.properties.name, description: `The ${kind}'s name (its file name in QUERIES_DIR, without .sql)` } } };
  const described = object({
    name: { type: 'string' },
    status: { type: 'string', enum: ['live', 'live_previous_version', 'invalid', 'file_refused'] },
    liveVersion: nullable('integer'),
    liveHash: nullable('string'),
    latestVersion: nullable('integer'),
    error: nullable('string'),
    committedAt: nullable('string', { format: 'date-time' }),
    ...(kind === 'trait' ? { values: traitValues } : {}),
  });
  const errors = [...ORG_DATA, 'trigger_not_found'] as const;
  return {
    list: operationSchema({
      tag, operationId: `list${Plural}`, auth: 'adminKey', params: slugOnly,
      summary: `List ${plural} with status, live version and hash, and the files in QUERIES_DIR that are not read and why`,
      ok: { status: 200, description: `Every ${kind}, by name`, schema: object({ [plural]: { type: 'array', items: described }, folderError: nullable('string') }) },
      errors: ORG_DATA,
    }),
    get: operationSchema({
      tag, operationId: `get${Kind}`, auth: 'adminKey', params,
      summary: `One ${kind}: its SQL, versions and the reason a version was refused`,
      ok: { status: 200, description: `The ${kind}, with the SQL of its live version (else its latest)`, schema: { ...described, required: [...described.required, 'sql'], properties: { ...described.properties, sql: nullable('string') } } },
      errors,
    }),
    versions: operationSchema({
      tag, operationId: `list${Kind}Versions`, auth: 'adminKey', params, querystring: { type: 'object', properties: pageQueryDoc(PAGE_LIMITS.versions) },
      summary: `Every version of the ${kind}, newest first: hash, SQL, why it was refused${kind === 'trigger' ? ', and the rows flows decided on and the sends it fired' : ''}`,
      ok: {
        status: 200,
        description: 'A page of versions, newest first',
        schema: pageSchema('versions', object(
          {
            version: { type: 'integer', minimum: 1 },
            hash: { type: 'string' },
            status: { type: 'string', enum: ['valid', 'refused', 'deleted'], description: 'deleted: the tombstone a DELETE recorded (empty hash and SQL)' },
            error: nullable('string'),
            committedAt: dateTime,
            sql: { type: 'string' },
            ...(kind === 'trigger' ? { fired: object({ rows: { type: 'integer', minimum: 0 }, sent: { type: 'integer', minimum: 0 } }) } : {}),
          },
          ['version', 'hash', 'status', 'error', 'committedAt', 'sql', ...(kind === 'trigger' ? ['fired'] : [])],
        )),
      },
      errors: [...errors, 'invalid_cursor'],
    }),
    put: operationSchema({
      tag, operationId: `save${Kind}`, auth: 'adminKey', params, body: putBody,
      summary: `Save the ${kind}'s SQL (validated; the last good version stays live when refused)`,
      description: 'A refused version answers 422 `invalid_trigger` with `name`, `version`, `reason` and `liveVersion`.',
      ok: { status: 200, description: `The ${kind} as saved, live`, schema: object({ name: { type: 'string' }, version: { type: 'integer', minimum: 1 }, hash: { type: 'string' }, status: { const: 'live' } }) },
      errors: [...ORG_DATA, 'invalid_json', 'invalid_trigger', 'query_file_refused', ...SANDBOX],
    }),
    delete: operationSchema({
      tag, operationId: `delete${Kind}`, auth: 'adminKey', params,
      summary: `Delete the ${kind}: its file in QUERIES_DIR goes, its versions stay as history`,
      description:
        `Refused (409 \`trigger_in_use\`, \`flows\` naming them) while a flow that is not archived names it. ` +
        'Removes its file (a link of that name too, never what the link points to) and records a version with status `deleted`: the history stays ' +
        '(`GET …/versions`), and saving it again (PUT, or the file coming back) makes the next version live. ' +
        'A file kept elsewhere in git and checked out again comes back as a new version: delete it there too.',
      ok: {
        status: 200,
        description: `The ${kind} is gone; \`version\` is its tombstone (null when only a refused file had the name)`,
        schema: object({ name: { type: 'string' }, deleted: { const: true }, version: nullable('integer') }),
      },
      errors: [...errors, 'trigger_in_use', 'query_file_refused'],
    }),
    preview: operationSchema({
      tag, operationId: `preview${Kind}`, auth: 'adminKey', params, body: previewBody,
      summary: `Run the ${kind} (or the SQL given) over a window without saving`,
      ok: {
        status: 200,
        description: 'The rows, and whether the limit cut them off; `version` is null for SQL given in the body',
        schema: object({
          version: nullable('integer'),
          window: object({ from: dateTime, to: dateTime }),
          count: { type: 'integer', minimum: 0 },
          truncated: { type: 'boolean' },
          rows: { type: 'array', items: { type: 'object' } },
        }),
      },
      errors: [...errors, 'invalid_json', 'invalid_trigger', 'trigger_query_failed', ...SANDBOX],
    }),
    diff: operationSchema({
      tag, operationId: `diff${Kind}`, auth: 'adminKey', params, body: diffBody,
      summary: `The contacts the SQL given would add and remove against the ${kind}'s live version over a window, without saving`,
      description:
        'Both versions run over the same window (default: the 24 h before the newest event), as a preview does; contacts are distinct identities. ' +
        `With no live version (\`liveVersion\` null), every contact of the SQL given is added. Each list holds at most ${DIFF_MAX_LISTED} identities, in order; ` +
        '`truncated` says a list or a version\'s contacts were cut, and the comparison then covers the identities up to the cut, exactly.',
      ok: {
        status: 200,
        description: 'Contacts added and removed by the SQL given, and how many both versions have',
        schema: object({
          liveVersion: nullable('integer'),
          window: object({ from: dateTime, to: dateTime }),
          added: { type: 'array', items: { type: 'string' } },
          removed: { type: 'array', items: { type: 'string' } },
          unchanged: { type: 'integer', minimum: 0 },
          truncated: { type: 'boolean' },
        }),
      },
      errors: [...ORG_DATA, 'invalid_json', 'invalid_trigger', 'trigger_query_failed', ...SANDBOX],
    }),
  };
}
