/** Route parameters shared by the admin routes (slugs validated with schemas/org.schema.json, list limits). */
import { AppError } from './errors.js';
import { SCHEMA_BASE } from './schemas.js';

/**
 * The longest path segment the router takes (Fastify's `maxParamLength`, default 100); longer answers 414.
 * Every value the service hands out must fit, and the longest is an unsubscribe link's token: it seals
 * `[org, address, topic]` (reactions/consent/unsubscribe-link.ts), so it grows with the address, and an
 * ordinary one in a 9-letter org with a named topic already passed 100 (issue 37). The largest the schemas
 * allow — a 40-character slug, a 320-character address (the `email` format allows only ASCII that JSON
 * writes as it is), a 64-character topic — is 434 bytes of JSON, 462 sealed, 616 in base64url. 1024 leaves
 * room, and is still a sixteenth of the 16 KB request line Node takes. Slugs, ids and names stay bounded by
 * their own schemas (400 past them); a 1024 segment is only a longer string for them to refuse.
 */
export const MAX_PATH_PARAM_CHARS = 1024;

export const slugSchema = { $ref: `${SCHEMA_BASE}org.schema.json#/$defs/slug` };
export const slugParams = { type: 'object', properties: { slug: slugSchema }, required: ['slug'] } as const;

/** A `limit` query parameter: `fallback` when absent, else an integer from 1 to `max` (400 otherwise). */
export function limitOf(raw: string | undefined, fallback: number, max: number): number {
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > max) {
    throw new AppError('invalid_request', `limit must be an integer from 1 to ${max}`);
  }
  return Number(raw);
}
