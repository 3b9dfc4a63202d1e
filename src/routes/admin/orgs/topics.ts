/**
 * Subscription topics and consent (SPEC 8, safe sending): PUT/GET /admin/v1/orgs/:slug/topics[/:topic],
 * and PUT /admin/v1/orgs/:slug/contacts/consent, one contact's consent to one topic.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../../../control/org-store.js';
import type { FlowStore } from '../../../reactions/flows/store/flow-store.js';
import { AppError } from '../../../core/errors.js';
import type { Context } from '../../../core/context.js';
import type { Metrics } from '../../../ops/metrics.js';
import type { ProfileIndex } from '../../../events/profiles/profile-index.js';
import { ALL_TOPIC, type ConsentStatus, type ConsentStore, TOPIC_PATTERN } from '../../../reactions/consent/consent-store.js';
import { dateTime, nullable, object, operationSchema } from '../../../openapi/route-schema.js';
import { contactEmailOf } from './contact-identity.js';
import { IDENTITY_QUERY, ORG_DATA, slugOnly, slugParam } from '../schema-parts.js';

const tag = 'Admin: org data' as const;
const auth = 'adminKey' as const;
const topicName = { type: 'string', pattern: TOPIC_PATTERN, description: 'The topic: lowercase letters, digits and _, starting with a letter (`all`: every org has it)' };
const status = { type: 'string', enum: ['subscribed', 'unsubscribed'] };
const topic = object({
  topic: topicName,
  name: { type: 'string' },
  default: { ...status, description: 'The status of a contact who never changed it: subscribed (opt-out topic) or unsubscribed (opt-in topic)' },
  createdAt: dateTime,
  updatedAt: dateTime,
});
const topicParams = { type: 'object', properties: { slug: slugParam, topic: topicName }, required: ['slug', 'topic'] };

const schemas = {
  put: operationSchema({
    tag, auth, operationId: 'putTopic', summary: 'Create or change a subscription topic',
    description: 'A flow names its topic; a contact unsubscribed from it (or from `all`) is never sent that flow\'s messages.',
    params: topicParams,
    body: {
      type: 'object', additionalProperties: false, required: ['name', 'default'],
      properties: { name: { type: 'string', minLength: 1, maxLength: 200, description: 'Shown on the unsubscribe page' }, default: status },
    },
    ok: { status: 200, description: 'The topic, and whether this call created it', schema: object({ topic, created: { type: 'boolean' } }) },
    errors: ORG_DATA,
  }),
  delete: operationSchema({
    tag, auth, operationId: 'deleteTopic', summary: 'Delete a subscription topic no flow names',
    description:
      'Refused (409 `topic_in_use`, `flows` naming them) while a flow not archived names the topic, and for `all`. ' +
      "Contacts' recorded choices for the topic are kept: a topic created again under the same name finds every unsubscribe where it was.",
    params: topicParams,
    ok: { status: 200, description: 'The topic is gone', schema: object({ topic: topicName, deleted: { const: true } }) },
    errors: [...ORG_DATA, 'topic_not_found', 'topic_in_use'],
  }),
  list: operationSchema({
    tag, auth, operationId: 'listTopics', summary: "The org's subscription topics", params: slugOnly,
    ok: { status: 200, description: 'Every topic, `all` included', schema: object({ topics: { type: 'array', items: topic } }) },
    errors: ORG_DATA,
  }),
  consent: operationSchema({
    tag, auth, operationId: 'putContactConsent', summary: "Set one contact's consent to one topic",
    description:
      'Recorded as of now; a later change from an event or the unsubscribe link replaces it, an earlier one does not. ' +
      'A contact erased with `suppress` gets no consent recorded: `unsubscribed` answers 200 with `source: suppressed` (it is never messaged anyway), `subscribed` answers 409 `contact_suppressed`.',
    params: slugOnly,
    body: {
      type: 'object', additionalProperties: false, required: ['identity', 'topic', 'status'],
      properties: { identity: { ...IDENTITY_QUERY, maxLength: 512 }, topic: topicName, status },
    },
    ok: {
      status: 200,
      description: "The contact's consent to the topic now",
      schema: object({
        email: { type: 'string' },
        topic: topicName,
        status,
        source: { type: 'string', description: 'admin, link, event or default; suppressed: the contact was erased with suppress, nothing was recorded' },
        changedAt: nullable('string', { format: 'date-time' }),
      }),
    },
    errors: [...ORG_DATA, 'invalid_identity', 'contact_not_found', 'topic_not_found', 'contact_suppressed'],
  }),
};

export function registerTopicRoutes(app: FastifyInstance, deps: { orgs: OrgStore; consent: ConsentStore; flows: Pick<FlowStore, 'naming'>; profiles: ProfileIndex; ctx: Context; metrics: Metrics }): void {
  const { orgs, consent } = deps;

  app.put<{ Params: { slug: string; topic: string }; Body: { name: string; default: ConsentStatus } }>('/admin/v1/orgs/:slug/topics/:topic', { schema: schemas.put }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return consent.putTopic(org.slug, request.params.topic, request.body, deps.ctx.clock.now());
  });

  app.delete<{ Params: { slug: string; topic: string } }>('/admin/v1/orgs/:slug/topics/:topic', { schema: schemas.delete }, async (request) => {
    const org = await orgs.get(request.params.slug);
    const { topic } = request.params;
    if (topic === ALL_TOPIC) throw new AppError('topic_in_use', 'all is every org\'s own topic (unsubscribed from all: no message at all); it cannot be deleted', { members: { flows: [] } });
    const naming = await deps.flows.naming(org.slug, { kind: 'topic', name: topic });
    if (naming.length > 0) {
      throw new AppError('topic_in_use', `flows name topic ${topic}: ${naming.join(', ')}; give them another topic or delete them first`, { members: { flows: naming } });
    }
    if (!(await consent.deleteTopic(org.slug, topic))) throw new AppError('topic_not_found', `org ${org.slug} has no topic ${topic} (GET /admin/v1/orgs/${org.slug}/topics lists them)`);
    return { topic, deleted: true as const };
  });

  app.get<{ Params: { slug: string } }>('/admin/v1/orgs/:slug/topics', { schema: schemas.list }, async (request) => {
    const org = await orgs.get(request.params.slug);
    return { topics: await consent.topics(org.slug) };
  });

  app.put<{ Params: { slug: string }; Body: { identity: string; topic: string; status: ConsentStatus } }>(
    '/admin/v1/orgs/:slug/contacts/consent',
    { schema: schemas.consent },
    async (request) => {
      const org = await orgs.get(request.params.slug);
      const { topic, status } = request.body;
      const email = contactEmailOf(deps.profiles, org.slug, request.body.identity);
      if (!(await consent.topic(org.slug, topic))) throw new AppError('topic_not_found', `org ${org.slug} has no topic ${topic}: create it with PUT /admin/v1/orgs/${org.slug}/topics/${topic}`);
      if ((await consent.setConsent(org.slug, { email, topic, status, source: 'admin', at: deps.ctx.clock.now() })) === 'suppressed') {
        if (status === 'subscribed') {
          throw new AppError('contact_suppressed', `this address was erased with suppress: true in org ${org.slug}; it is never messaged and no consent is recorded for it`);
        }
        return { email, topic, status, source: 'suppressed', changedAt: null };
      }
      deps.metrics.consentChanges.inc({ source: 'admin', status });
      const now = (await consent.ofContact(org.slug, email)).find((c) => c.topic === topic)!;
      return { email, ...now };
    },
  );
}
