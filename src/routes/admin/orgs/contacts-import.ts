/** POST /admin/v1/orgs/{slug}/contacts/import — CSV (header row) or NDJSON, upsert by e-mail (SPEC 6.1). */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../../core/errors.js';
import type { OrgStore } from '../../../control/org-store.js';
import type { ContactStore } from '../../../events/profiles/contact-store.js';
import { type ImportFormat, parseContacts } from '../../../events/profiles/parse-contacts.js';
import type { ProfileMaterializer } from '../../../events/profiles/profile-materializer.js';

/** 100,000 contacts with a few columns fit well within this. */
const IMPORT_LIMIT_BYTES = 64 * 1024 * 1024;

const formats: Record<string, ImportFormat> = { 'text/csv': 'csv', 'application/x-ndjson': 'ndjson' };

export function registerImportRoutes(
  app: FastifyInstance,
  deps: { orgs: OrgStore; contacts: ContactStore; materializer: ProfileMaterializer },
): void {
  app.addContentTypeParser(Object.keys(formats), { parseAs: 'string', bodyLimit: IMPORT_LIMIT_BYTES }, (_req, body, done) =>
    done(null, body),
  );

  app.post<{ Params: { slug: string } }>(
    '/admin/v1/orgs/:slug/contacts/import',
    { bodyLimit: IMPORT_LIMIT_BYTES },
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
