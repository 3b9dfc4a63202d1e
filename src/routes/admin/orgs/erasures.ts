/**
 * Erasure and suppression of one contact (SPEC 8, safe sending): POST /admin/v1/orgs/:slug/contacts/erase
 * (202 and a receipt), GET /admin/v1/orgs/:slug/erasures[/:id]. The work runs in the background
 * (src/privacy/erasure.ts); the receipt says pending, then done with the rows removed per kind.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../../../control/org-store.js';
import { AppError } from '../../../core/errors.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import { dateTime, nullable, object, operationSchema } from '../../../openapi/route-schema.js';
import type { Erasures } from '../../../privacy/erasure.js';
import { contactEmailOf } from './contact-identity.js';
import { IDENTITY_QUERY, ORG_DATA, slugOnly, slugParam } from '../schema-parts.js';

const tag = 'Admin: org data' as const;
const auth = 'adminKey' as const;
/** Receipts listed at once: the newest first. */
const LIST_LIMIT = 100;

const receipt = object({
  id: { type: 'string', description: 'era_ and 24 hex digits' },
  status: { type: 'string', enum: ['pending', 'done'] },
  emailHash: { type: 'string', description: "SHA-256 of the contact's normalised e-mail (the receipt keeps no personal data)" },
  suppress: { type: 'boolean' },
  requestedAt: dateTime,
  doneAt: nullable('string', { format: 'date-time' }),
  removed: {
    type: ['object', 'null'],
    description:
      'Once done: rows removed per kind (events, identities, activity, quarantined, importedContacts, consent, sends, decisions, flowEntries, occurrenceMembers: the contact left out of scheduled sends still to come; ' +
      "outbox: lines of the outbox channel's file, DATA_DIR/outbox/<org>.jsonl)",
    additionalProperties: { type: 'integer' },
  },
});

const schemas = {
  erase: operationSchema({
    tag, auth, operationId: 'eraseContact', summary: 'Erase one contact, and optionally suppress it',
    description:
      "Deletes the contact's events (those still in the log too: a tombstone keeps them out), pending events, profile, imported fields, consent, decisions and messages, and its lines in the outbox channel's file; " +
      'the Audience API finds it no more. With `suppress`, its future events are kept out as well, no flow ever messages it, and no consent change, import or event stores the address again. ' +
      'The event log keeps the raw events until its retention (LOG_RETENTION_HOURS, NATS_STREAM_MAX_AGE): see docs/operators.md. Answers at once; the receipt says when it is done.',
    params: slugOnly,
    body: {
      type: 'object', additionalProperties: false, required: ['identity'],
      properties: {
        identity: { ...IDENTITY_QUERY, maxLength: 512 },
        suppress: { type: 'boolean', default: false, description: 'Also refuse its future events and never message it' },
      },
    },
    ok: { status: 202, description: 'The erasure is recorded and under way', schema: receipt },
    errors: [...ORG_DATA, 'invalid_identity', 'contact_not_found', 'log_unavailable'],
  }),
  get: operationSchema({
    tag, auth, operationId: 'getErasure', summary: 'One erasure receipt: pending, or done with the rows removed',
    params: { type: 'object', properties: { slug: slugParam, id: { type: 'string', maxLength: 64 } }, required: ['slug', 'id'] },
    ok: { status: 200, description: 'The receipt', schema: receipt },
    errors: [...ORG_DATA, 'erasure_not_found'],
  }),
  list: operationSchema({
    tag, auth, operationId: 'listErasures', summary: `The org's erasure receipts, newest first (at most ${LIST_LIMIT})`,
    params: slugOnly,
    ok: { status: 200, description: 'Receipts', schema: object({ erasures: { type: 'array', items: receipt } }) },
    errors: ORG_DATA,
  }),
};

export function registerErasureRoutes(app: FastifyInstance, deps: { orgs: OrgStore; erasures: Erasures; profiles: ProfileIndex }): void {
  const { orgs, erasures } = deps;

  app.post<{ Params: { slug: string }; Body: { identity: string; suppress?: boolean } }>('/admin/v1/orgs/:slug/contacts/erase', { schema: schemas.erase }, async (request, reply) => {
    const org = await orgs.get(request.params.slug);
    const email = contactEmailOf(deps.profiles, org.slug, request.body.identity);
    const receipt = await erasures.request(org.slug, email, request.body.suppress ?? false);
    request.logDetails = { erasure: receipt.id };
    return reply.code(202).send(receipt);
  });

  app.get<{ Params: { slug: string; id: string } }>('/admin/v1/orgs/:slug/erasures/:id', { schema: schemas.get }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const found = await erasures.get(org.slug, request.params.id);
    if (!found) throw new AppError('erasure_not_found', `org ${org.slug} has no erasure ${request.params.id}: GET /admin/v1/orgs/${org.slug}/erasures lists them`);
    return found;
  });

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/erasures', { schema: schemas.list }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { erasures: await erasures.list(org.slug, LIST_LIMIT) };
  });
}
