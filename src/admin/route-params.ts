/** Route parameter schemas shared by the admin routes (validated with schemas/org.schema.json). */
import { SCHEMA_BASE } from '../schemas.js';

export const slugSchema = { $ref: `${SCHEMA_BASE}org.schema.json#/$defs/slug` };
export const slugParams = { type: 'object', properties: { slug: slugSchema }, required: ['slug'] } as const;
