/**
 * GET /admin/v1/orgs/:slug/contacts?identity=<type>:<value>: one contact's profile as this process holds
 * it, every field, with the org's content fields (what the Audience API returns, in its order). For
 * operators and the console's Profiles page: the admin key, no Audience API token, no rate limit. Its
 * `meta` says how fresh it is, as the Audience API's answers do.
 */
import type { FastifyInstance } from 'fastify';
import { identityOf } from './contact-identity.js';
import { AppError } from '../../../core/errors.js';
import type { OrgStore } from '../../../control/org-store.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import { nullable, object, operationSchema } from '../../../openapi/route-schema.js';
import type { ConsentStore } from '../../../reactions/consent/consent-store.js';
import { IDENTITY_QUERY, ORG_DATA, slugOnly } from '../schema-parts.js';
import type { Freshness } from '../../../events/profiles/freshness.js';
import { META_SCHEMA, metaOf } from '../../audience/fresh.js';

const schema = operationSchema({
  tag: 'Admin: org data',
  summary: "One contact's profile, every field, with the org's content fields (what the Audience API returns)",
  operationId: 'getOrgContact',
  auth: 'adminKey',
  params: slugOnly,
  querystring: { type: 'object', additionalProperties: false, required: ['identity'], properties: { identity: { ...IDENTITY_QUERY, maxLength: 512 } } },
  ok: {
    status: 200,
    description: "The contact's profile as this process holds it, and the org's content fields in their order",
    schema: object({
      contact: { type: 'object', additionalProperties: true },
      contentFields: { type: 'array', items: { type: 'string' } },
      meta: META_SCHEMA,
      subscriptions: {
        type: 'array',
        description: "The contact's consent to each topic of the org: a change (admin, link, event) or the topic's default",
        items: object({
          topic: { type: 'string' },
          status: { type: 'string', enum: ['subscribed', 'unsubscribed'] },
          source: { type: 'string', enum: ['admin', 'link', 'event', 'default'] },
          changedAt: nullable('string', { format: 'date-time' }),
        }),
      },
    }),
  },
  errors: [...ORG_DATA, 'invalid_identity', 'contact_not_found'],
});

export function registerContactRoute(
  app: FastifyInstance,
  deps: { orgs: OrgStore; profiles: ProfileIndex; consent: Pick<ConsentStore, 'ofContact'>; freshness: Pick<Freshness, 'lagMs'>; now: () => number },
): void {
  app.get<{ Params: { slug: string }; Querystring: { identity: string } }>('/admin/v1/orgs/:slug/contacts', { schema }, async (request) => {
    const org = await deps.orgs.get(request.params.slug);
    const identity = identityOf(request.query.identity);
    const contact = deps.profiles.find(org.slug, identity.type, identity.value);
    if (!contact) throw new AppError('contact_not_found', 'no contact with this identity in this org');
    const subscriptions = await deps.consent.ofContact(org.slug, String(contact.email_address));
    const meta = metaOf(contact, new Date(deps.now()).toISOString(), deps.freshness.lagMs(org.slug));
    return { contact, contentFields: org.contentFields, meta, subscriptions };
  });
}
