/**
 * GET /admin/v1/orgs/{slug}/flows/{id}/occurrences (issue 26): a scheduled or recurring flow's occurrences,
 * newest first, each with how far it got (members, decided, outcomes, the next member due) or why it was
 * skipped. A triggered flow has none.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../../../../control/org-store.js';
import { PAGE_LIMITS, pageOf as pageOfRows, pageQuerySchema, pageRequest, withoutKey } from '../../../../db/paging.js';
import { dateTime, nullable, object, operationSchema, pageOf, validatedAs } from '../../../../openapi/route-schema.js';
import type { FlowStore } from '../../../../reactions/flows/store/flow-store.js';
import { OCCURRENCES_KEYSET, type OccurrenceStore } from '../../../../reactions/flows/store/occurrence-store.js';
import { jsonRow } from '../../../../reactions/triggers/json-row.js';
import { PAGED, pageQueryDoc, slugParam } from '../../schema-parts.js';

const schema = operationSchema({
  tag: 'Admin: triggers and flows', operationId: 'listFlowOccurrences', auth: 'adminKey',
  summary: "A scheduled or recurring flow's occurrences: status, members, progress, outcomes",
  description:
    'Newest first. An occurrence is one local date-time of the schedule (`2026-12-01T09:00`); `sending` while members are left (`nextDueAt`: when the next is due, ' +
    "later in the contacts' own zones), `done`, or `skipped` (`reason`). `members` is the segment's size when it started, `missed` those due more than an hour before it could start. " +
    'A triggered flow has none. Per contact, `GET …/decisions` (event id `occurrence:<occurrence>`).',
  params: { type: 'object', properties: { slug: slugParam, id: { type: 'string', description: "The flow's id" } }, required: ['slug', 'id'] },
  querystring: { type: 'object', additionalProperties: false, properties: pageQueryDoc(PAGE_LIMITS.occurrences) },
  ok: {
    status: 200,
    description: 'A page of occurrences, newest first',
    schema: pageOf(
      'occurrences',
      object({
        occurrence: { type: 'string', description: 'The local date-time, YYYY-MM-DDTHH:MM' },
        status: { type: 'string', enum: ['sending', 'done', 'skipped'] },
        dueAt: { ...dateTime, description: "When it was due (with the contacts' zones: when its time came in the first zone)" },
        nextDueAt: nullable('string', { format: 'date-time', description: 'While sending: when the next member is due' }),
        members: { type: 'integer', minimum: 0 },
        missed: { type: 'integer', minimum: 0 },
        decided: { type: 'integer', minimum: 0 },
        outcomes: { type: 'object', additionalProperties: { type: 'integer', minimum: 1 }, description: 'Decisions so far per outcome (sent, unsubscribed, frequency_capped, …)' },
        reason: nullable('string'),
        segmentHash: nullable('string', { description: 'The segment version its members were read with' }),
        startedAt: dateTime,
        finishedAt: nullable('string', { format: 'date-time' }),
      }),
    ),
  },
  errors: [...PAGED, 'flow_not_found'],
});

export function registerFlowOccurrencesRoute(app: FastifyInstance, deps: { orgs: OrgStore; flows: FlowStore; occurrences: Pick<OccurrenceStore, 'page'> }): void {
  const { occurrences } = deps;
  app.get<{ Params: { slug: string; id: string }; Querystring: { limit?: string; cursor?: string } }>(
    '/admin/v1/orgs/:slug/flows/:id/occurrences',
    { schema, validatorCompiler: validatedAs({ querystring: { type: 'object', additionalProperties: false, properties: pageQuerySchema } }) },
    async (request) => {
      const org = await deps.orgs.get(request.params.slug);
      deps.flows.get(org.slug, request.params.id);
      const page = pageRequest(request.query, PAGE_LIMITS.occurrences, ['occurrences', org.slug, request.params.id], OCCURRENCES_KEYSET);
      const rows = await occurrences.page(org.slug, request.params.id, page);
      const { items, nextCursor } = pageOfRows(rows, page, (row) => ({ ...jsonRow(withoutKey(row)), outcomes: JSON.parse(String(row.outcomes)) as unknown }), OCCURRENCES_KEYSET);
      return { occurrences: items, nextCursor };
    },
  );
}
