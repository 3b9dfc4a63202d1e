/**
 * GET /admin/v1/orgs/{slug}/flows/{id}/waits (issue 26): the entries of a flow with steps that are still
 * in them — where each is, what it waits for and until when — for the whole flow or one contact.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../../../../control/org-store.js';
import type { ProfileIndex } from '../../../../events/profiles/profile-index.js';
import { dateTime, object, operationSchema } from '../../../../openapi/route-schema.js';
import type { FlowStore } from '../../../../reactions/flows/store/flow-store.js';
import type { WaitStore, WaitRow } from '../../../../reactions/flows/store/wait-store.js';
import { movesAt } from '../../../../reactions/flows/store/wait-due.js';
import type { Step } from '../../../../generated/flow.js';
import { contactEmailOf } from '../contact-identity.js';
import { ADMIN, slugParam } from '../../schema-parts.js';

const MAX_LIMIT = 1000;

const entry = object(
  {
    email: { type: 'string' },
    eventId: { type: 'string', description: 'The event that entered the contact' },
    variant: { type: ['string', 'null'] },
    step: { type: 'integer', description: 'The index of the step the entry is at' },
    kind: { enum: ['wait', 'waitUntil', 'message'], description: 'message: about to be sent (held by quiet hours until dueAt)' },
    until: { type: ['string', 'null'], description: 'waitUntil: the event (or trigger) that ends the wait early' },
    dueAt: dateTime,
    enteredAt: dateTime,
    lastWait: { enum: ['event', 'timeout', null], description: 'How the last waitUntil ended' },
  },
  ['email', 'eventId', 'variant', 'step', 'kind', 'until', 'dueAt', 'enteredAt', 'lastWait'],
);

const schema = operationSchema({
  tag: 'Admin: triggers and flows', operationId: 'listFlowWaits', auth: 'adminKey',
  summary: 'Entries of a flow with steps that are still in them, for the flow or one contact',
  description: 'Oldest entry first; `total` counts them all. An entry leaves this list when its last step has run or it exited.',
  params: { type: 'object', properties: { slug: slugParam, id: { type: 'string' } }, required: ['slug', 'id'] },
  querystring: {
    type: 'object',
    additionalProperties: false,
    properties: {
      identity: { type: 'string', description: 'email:<address>, email-hash:<sha256 hex> or user_id:<id>' },
      limit: { type: 'string', pattern: '^[1-9][0-9]{0,2}$|^1000$', description: `At most this many entries (1–${MAX_LIMIT}, default 100)` },
    },
  },
  ok: { status: 200, description: 'The entries', schema: object({ entries: { type: 'array', items: entry }, total: { type: 'integer' } }) },
  errors: [...ADMIN, 'org_not_found', 'flow_not_found', 'invalid_identity', 'contact_not_found', 'storage_unavailable', 'org_unavailable'],
});

export function registerFlowWaitsRoute(app: FastifyInstance, deps: { orgs: OrgStore; flows: FlowStore; profiles: ProfileIndex; waits: Pick<WaitStore, 'list'> }): void {
  const { waits } = deps;
  app.get<{ Params: { slug: string; id: string }; Querystring: { identity?: string; limit?: string } }>('/admin/v1/orgs/:slug/flows/:id/waits', { schema }, async (request) => {
    const org = await deps.orgs.get(request.params.slug);
    const flow = deps.flows.get(org.slug, request.params.id);
    const email = request.query.identity === undefined ? null : contactEmailOf(deps.profiles, org.slug, request.query.identity);
    const { entries, total } = await waits.list(org.slug, flow.definition.id, email, Number(request.query.limit ?? 100));
    return { entries: entries.map((e) => toApi(e, flow.definition.steps?.[e.step])), total };
  });
}

function toApi(e: WaitRow, step: Step | undefined) {
  const kind = step === undefined ? 'message' : 'wait' in step ? 'wait' : 'waitUntil' in step ? 'waitUntil' : 'message';
  return {
    email: e.email,
    eventId: e.eventId,
    variant: e.variant,
    step: e.step,
    kind,
    // A first step not read by a pass yet is a wait from the entry all the same.
    until: e.waiting ? e.untilEvent : e.step === 0 && step !== undefined && 'waitUntil' in step ? step.waitUntil.event : null,
    dueAt: new Date(movesAt(e, step)).toISOString(),
    enteredAt: new Date(e.enteredAt).toISOString(),
    lastWait: e.lastWait,
  };
}
