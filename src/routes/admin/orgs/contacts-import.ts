/** POST /admin/v1/orgs/{slug}/contacts/import — CSV (header row) or NDJSON, upsert by e-mail (SPEC 6.1). */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../../core/errors.js';
import type { OrgStore } from '../../../control/org-store.js';
import type { ContactStore } from '../../../events/profiles/contact-store.js';
import { type ImportFormat, parseContacts } from '../../../events/profiles/parse-contacts.js';
import type { ProfileMaterializer } from '../../../events/profiles/profile-materializer.js';
import { object, operationSchema, validatedAs } from '../../../openapi/route-schema.js';
import { ORG_DATA, slugOnly } from '../schema-parts.js';

/** 100,000 contacts with a few columns fit well within this. */
const IMPORT_LIMIT_BYTES = 64 * 1024 * 1024;

const formats: Record<string, ImportFormat> = { 'text/csv': 'csv', 'application/x-ndjson': 'ndjson' };

const schema = operationSchema({
  tag: 'Admin: org data',
  summary: 'Import contacts (CSV with a header row, or NDJSON), upserted by e-mail',
  description: 'text/csv (with a header row) or application/x-ndjson, up to 64 MB. A line that cannot be imported is reported in `rejected`; a CSV that cannot be read at all imports nothing (400).',
  operationId: 'importContacts',
  auth: 'adminKey',
  params: slugOnly,
  consumes: Object.keys(formats),
  body: { type: 'string', description: 'CSV with a header row, or one JSON object per line' },
  ok: {
    status: 200,
    description: 'Counts of imported lines, and the rejected ones with their reasons',
    schema: object({
      imported: { type: 'integer', minimum: 0 },
      rejected: {
        type: 'array',
        items: object({ line: { type: 'integer', minimum: 1 }, code: { type: 'string', enum: ['missing_email', 'invalid_email', 'invalid_row', 'invalid_field_name'] }, message: { type: 'string' } }),
      },
    }),
  },
  errors: [...ORG_DATA, 'payload_too_large', 'unsupported_media_type'],
});

export function registerImportRoutes(
  app: FastifyInstance,
  deps: { orgs: OrgStore; contacts: ContactStore; materializer: ProfileMaterializer },
): void {
  app.addContentTypeParser(Object.keys(formats), { parseAs: 'string', bodyLimit: IMPORT_LIMIT_BYTES }, (_req, body, done) =>
    done(null, body),
  );

  app.post<{ Params: { slug: string } }>(
    '/admin/v1/orgs/:slug/contacts/import',
    // The slug and the body are checked by the handler, as before the route had a schema.
    { bodyLimit: IMPORT_LIMIT_BYTES, schema, validatorCompiler: validatedAs({ params: null, body: null }) },
    async (request) => {
      const org = await deps.orgs.get(request.params.slug);
      const mediaType = (request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
      const format = formats[mediaType];
      if (!format || typeof request.body !== 'string') {
        throw new AppError('unsupported_media_type', 'send text/csv (with a header row) or application/x-ndjson');
      }
      let parsed;
      try {
        parsed = parseContacts(format, request.body);
      } catch (error) {
        // A CSV that cannot be read at all (unbalanced quotes, ragged rows) imports nothing.
        throw new AppError('invalid_request', `the CSV cannot be parsed: ${(error as Error).message}`);
      }
      await deps.contacts.upsert(org.slug, parsed.rows);
      await deps.materializer.refresh(parsed.rows.map((r) => ({ org: org.slug, email: r.email })));
      return { imported: parsed.rows.length, rejected: parsed.errors };
    },
  );
}
