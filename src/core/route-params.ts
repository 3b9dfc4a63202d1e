/** Route parameters shared by the admin routes (slugs validated with schemas/org.schema.json, list limits). */
import { AppError } from './errors.js';
import { SCHEMA_BASE } from './schemas.js';

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
