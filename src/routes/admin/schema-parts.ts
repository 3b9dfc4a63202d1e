/** Pieces the admin routes' schemas share (openapi/route-schema.ts): problem codes, parameters, paged lists. */
import type { ErrorCode } from '../../core/errors.js';
import { PAGE_BYTES } from '../../db/paging.js';
import { schemaRef } from '../../openapi/route-schema.js';

/** Every admin route: the admin key, its failed-attempt limit, the control plane. */
export const ADMIN: ErrorCode[] = ['invalid_admin_key', 'rate_limited', 'control_unavailable', 'invalid_request'];
/** Org-database routes: relayed to the owning storage shard in NATS mode; served by its storage process. */
export const ORG_DATA: ErrorCode[] = [...ADMIN, 'org_not_found', 'shard_unavailable', 'shard_answer_too_large', 'storage_unavailable', 'org_unavailable'];
/** Routes that check or run an org's trigger and segment SQL. */
export const SANDBOX: ErrorCode[] = ['query_budget_exceeded', 'sandbox_busy', 'sandbox_paused'];
export const PAGED: ErrorCode[] = [...ORG_DATA, 'invalid_cursor'];

export const slugParam = { ...schemaRef('org', 'slug'), description: "The org's slug" };
export const slugOnly = { type: 'object', properties: { slug: slugParam }, required: ['slug'] } as const;

export const ENV_QUERY = { type: 'string', enum: ['', 'staging', 'production'], description: 'staging or production (default, or empty: both)' } as const;

/** `limit` and `cursor` of a paged list, as the document describes them (the handler checks them: invalid_request, invalid_cursor). */
export const pageQueryDoc = (limits: { fallback: number; max: number }) => ({
  limit: {
    type: 'string',
    pattern: '^[0-9]+$',
    description: `items per page, an integer from 1 to ${limits.max} (default ${limits.fallback}); a page also ends before its JSON passes ${PAGE_BYTES / 1024} KiB`,
  },
  cursor: { type: 'string', minLength: 1, description: 'the `nextCursor` of the previous page, unchanged, with the same filters (omit for the first page)' },
});

export const IDENTITY_QUERY = { type: 'string', description: 'email:<address>, email-hash:<sha256 hex> or user_id:<id>', examples: ['email:ada@example.com'] } as const;
