/** What the flow routes (flows.ts) declare for the document (SPEC 8). */
import { QUERY_NAME } from '../../../../reactions/triggers/trigger-store.js';
import { dateTime, nullable, object, operationSchema, pageOf, schemaRef, validatedAs } from '../../../../openapi/route-schema.js';
import { IDENTITY_QUERY, ORG_DATA, PAGED, SANDBOX, pageQueryDoc, slugOnly, slugParam } from '../../schema-parts.js';
import { PAGE_LIMITS } from '../../../../db/paging.js';
import { OUTCOMES, STEP_OUTCOMES } from '../../../../reactions/flows/rules/decision.js';
import { rangeQueryDoc, rangeSchemaParts } from '../../../../db/time-buckets.js';
import { countSeries } from '../events-activity.js';

const tag = 'Admin: triggers and flows' as const;
const auth = 'adminKey' as const;
const flowParams = { type: 'object', properties: { slug: slugParam, id: { type: 'string', description: "The flow's id" } }, required: ['slug', 'id'] };
const flow = { status: 200, description: 'The flow', schema: schemaRef('flow', 'Flow') };
const sendStatus = { type: 'string', enum: ['pending', 'delivered', 'failed', 'dead', 'holdout', 'entered', 'deferred', 'cancelled'] };
const interval = object({ low: { type: 'number' }, high: { type: 'number' } });
const identity = { ...IDENTITY_QUERY, description: `only this contact: ${IDENTITY_QUERY.description}` };

const listFlowsQuery = {
  type: 'object',
  additionalProperties: false,
  properties: { archived: { type: 'string', enum: ['true', 'false'], description: '`true`: the archived (deleted) flows instead of the others' } },
} as const;

/** The flow definition is checked by checkFlow (422 invalid_flow, with the reasons), not by Fastify. */
export const definitionValidation = validatedAs({ body: null });

export const flowSchemas = {
  create: operationSchema({
    tag, auth, operationId: 'createFlow', summary: 'Create a flow (a draft)', params: slugOnly, body: schemaRef('flow'),
    ok: { ...flow, status: 201 },
    errors: [...ORG_DATA, 'invalid_json', 'invalid_flow', 'flow_exists'],
  }),
  list: operationSchema({
    tag, auth, operationId: 'listFlows', summary: 'List flows', params: slugOnly,
    querystring: listFlowsQuery,
    ok: { status: 200, description: "The org's flows (archived ones only with `archived=true`)", schema: object({ flows: { type: 'array', items: schemaRef('flow', 'Flow') } }) },
    errors: ORG_DATA,
  }),
  archive: operationSchema({
    tag, auth, operationId: 'deleteFlow', summary: 'Delete (archive) a flow',
    description:
      'The flow stops at once and never runs again: a run under way writes nothing; its entries waiting in steps leave them (no further step, no exit); ' +
      'its sends not yet handed to a channel (pending, or deferred by quiet hours) become `cancelled`, and a send in flight ends as it ends; ' +
      'a scheduled occurrence under way stops (`skipped`, its members left undecided). What it did stays: sends, decisions, occurrences, results, ' +
      'the contacts\' `campaigns_received`, and the frequency caps that count its sends. Its id stays taken. Archiving an archived flow changes nothing.',
    params: flowParams,
    ok: {
      status: 200,
      description: 'The archived flow, and what stopped with it (all 0 when it was archived already)',
      schema: object({
        flow: schemaRef('flow', 'Flow'),
        stopped: object({
          sends: { type: 'integer', minimum: 0, description: 'Sends cancelled: pending or deferred, not yet handed to a channel' },
          entries: { type: 'integer', minimum: 0, description: 'Entries that were waiting in its steps' },
          occurrences: { type: 'integer', minimum: 0, description: 'Scheduled occurrences under way, stopped' },
        }),
      }),
    },
    errors: [...ORG_DATA, 'flow_not_found'],
  }),
  get: operationSchema({ tag, auth, operationId: 'getFlow', summary: 'One flow', params: flowParams, ok: flow, errors: [...ORG_DATA, 'flow_not_found'] }),
  replace: operationSchema({
    tag, auth, operationId: 'replaceFlow', summary: 'Replace a flow definition', description: 'The body\'s `id` must be the flow\'s id.', params: flowParams, body: schemaRef('flow'),
    ok: flow,
    errors: [...ORG_DATA, 'invalid_json', 'invalid_flow', 'flow_not_found', 'flow_archived'],
  }),
  start: operationSchema({
    tag, auth, operationId: 'startFlow', summary: 'Start a flow', description: 'Its definition is checked again first (the trigger may have been refused since it was saved).', params: flowParams,
    ok: flow,
    errors: [...ORG_DATA, 'flow_not_found', 'invalid_flow', 'flow_archived'],
  }),
  pause: operationSchema({ tag, auth, operationId: 'pauseFlow', summary: 'Pause a flow', params: flowParams, ok: flow, errors: [...ORG_DATA, 'flow_not_found', 'flow_archived'] }),
  run: operationSchema({
    tag, auth, operationId: 'runFlow', summary: 'Run a flow now, once',
    description: 'Runs its window now instead of waiting for its schedule: a live triggered flow only (`skipped` says why not; a scheduled or recurring flow answers 409 `flow_not_triggered`: it sends at its schedule). It sends for real: there is no dry run here, and a body with any member is refused (400, the member named). To see what a flow would send, preview its trigger and its message.',
    params: flowParams,
    body: { type: 'object', additionalProperties: false, properties: {}, description: 'Nothing, or `{}`' },
    ok: {
      status: 200,
      description: 'What the run decided: the count of each outcome',
      schema: object({
        skipped: nullable('string'),
        rows: { type: 'integer', minimum: 0 },
        outcomes: { type: 'object', additionalProperties: { type: 'integer', minimum: 1 } },
        flow: schemaRef('flow', 'Flow'),
      }),
    },
    errors: [...ORG_DATA, 'flow_not_found', 'flow_archived', 'flow_not_triggered', 'trigger_query_failed', ...SANDBOX],
  }),
  sends: operationSchema({
    tag, auth, operationId: 'listFlowSends', summary: "A flow's sends: status, attempts, variant, trigger version", params: flowParams,
    querystring: { type: 'object', additionalProperties: false, properties: { identity, status: { ...sendStatus, description: 'only sends with this status' }, ...pageQueryDoc(PAGE_LIMITS.sends) } },
    ok: {
      status: 200,
      description: 'A page of sends, newest first',
      schema: pageOf('sends', object({
        sendId: { type: 'string' },
        email: { type: 'string' },
        eventId: nullable('string'),
        variant: nullable('string'),
        channel: { type: 'string', enum: ['email', 'webhook', 'outbox'] },
        status: sendStatus,
        attempts: { type: 'integer', minimum: 0 },
        lastError: nullable('string'),
        triggerHash: nullable('string'),
        createdAt: dateTime,
        sentAt: nullable('string', { format: 'date-time' }),
        dueAt: nullable('string', { format: 'date-time', description: 'A send deferred by quiet hours: when they end' }),
      })),
    },
    errors: [...PAGED, 'flow_not_found', 'invalid_identity'],
  }),
  decisions: operationSchema({
    tag, auth, operationId: 'listFlowDecisions', summary: 'Every trigger row the flow decided and why (sent, excluded_by_segment, reentry_blocked, …)', params: flowParams,
    querystring: { type: 'object', additionalProperties: false, properties: { identity, ...pageQueryDoc(PAGE_LIMITS.decisions) } },
    ok: {
      status: 200,
      description: 'A page of decisions, newest run first',
      schema: pageOf('decisions', object({
        eventId: nullable('string'),
        identity: nullable('string'),
        identityType: nullable('string'),
        email: nullable('string'),
        outcome: { type: 'string', enum: [...OUTCOMES, ...STEP_OUTCOMES] },
        variant: nullable('string'),
        sendId: nullable('string'),
        reason: nullable('string'),
        deliveryStatus: nullable('string'),
        attempts: nullable('integer'),
        triggerHash: { type: 'string' },
        decidedAt: dateTime,
      })),
    },
    errors: [...PAGED, 'flow_not_found', 'invalid_identity'],
  }),
  results: operationSchema({
    tag, auth, operationId: 'getFlowResults', params: flowParams,
    summary: "A flow's experiment results: entered, sent and converted per variant and for the holdout, with rates, lift and p-values",
    description:
      'Contacts the flow entered (sent, holdout or deferred by quiet hours) in `[from, to)`, once per variant; `sent`: with a delivered send; `converted`: with a goal event (production) ' +
      'at or after an entry and within the goal\'s `withinSeconds`. Rates with a 95 % Wilson interval; lift against the control (the holdout, else the first variant) with a 95 % interval ' +
      'from the log rate ratio; the two-sided p-value of the pooled two-proportion z-test. Without a goal, `converted` and the statistics are null. ' +
      'docs/data-engineers.md, "Goals and experiment results", has the formulas.',
    querystring: {
      type: 'object',
      additionalProperties: false,
      properties: {
        from: { ...dateTime, description: 'only entries at or after this time (default: since the first entry)' },
        to: { ...dateTime, description: 'only entries before this time (default: now)' },
      },
    },
    ok: {
      status: 200,
      description: 'Per variant (the holdout included) the counts and statistics, and per UTC day the contacts entered and converted',
      schema: object({
        flowId: { type: 'string' },
        goal: { anyOf: [schemaRef('flow', 'Goal'), { type: 'null' }] },
        range: object({ from: nullable('string', { format: 'date-time', description: 'null: no entry yet' }), to: dateTime }),
        method: object({
          confidence: { type: 'number' },
          rateInterval: { type: 'string', enum: ['wilson'] },
          liftInterval: { type: 'string' },
          test: { type: 'string' },
        }),
        control: nullable('string', { description: 'The label the others are compared with; null for a flow without an experiment' }),
        variants: {
          type: 'array',
          items: object({
            variant: nullable('string', { description: 'null: a flow without an experiment, or entries made before it had one' }),
            holdout: { type: 'boolean' },
            control: { type: 'boolean' },
            entered: { type: 'integer', minimum: 0 },
            sent: { type: 'integer', minimum: 0 },
            converted: nullable('integer', { minimum: 0 }),
            rate: nullable('number', { minimum: 0, maximum: 1 }),
            rateInterval: { anyOf: [interval, { type: 'null' }] },
            lift: nullable('number', { minimum: -1 }),
            liftInterval: { anyOf: [interval, { type: 'null' }] },
            pValue: nullable('number', { minimum: 0, maximum: 1 }),
          }),
        },
        daily: {
          type: 'array',
          items: object({
            day: { type: 'string', format: 'date' },
            variant: nullable('string'),
            entered: { type: 'integer', minimum: 0 },
            sent: { type: 'integer', minimum: 0 },
            converted: nullable('integer', { minimum: 0 }),
          }),
        },
      }),
    },
    errors: [...ORG_DATA, 'flow_not_found'],
  }),
  activity: operationSchema({
    tag, auth, operationId: 'getFlowActivity', params: flowParams,
    summary: "A flow's sends per status over time, and its funnel: trigger rows entered, decided to message, sent, delivered, and the rest by reason",
    description:
      'Rows the flow made in `[from, to)`: sends by the time they were decided (a deferred send that went out later counts at its decision, under its status now), ' +
      'decisions by the time they were taken. `entered` counts trigger rows, once each; `sent` counts messages (a flow with steps sends one per message step); ' +
      '`skipped` the rows not messaged by outcome, and with `atStep` the messages of steps skipped and the exits. docs/data-engineers.md, "A flow\'s activity".',
    querystring: { type: 'object', additionalProperties: false, properties: rangeQueryDoc },
    ok: {
      status: 200,
      description: 'One count per bucket for each send status the range has, and the funnel over the whole range',
      schema: object({
        flowId: { type: 'string' },
        ...rangeSchemaParts,
        sends: {
          type: 'array',
          items: countSeries({ status: sendStatus }),
        },
        funnel: object({
          entered: { type: 'integer', minimum: 0 },
          decided: { type: 'integer', minimum: 0 },
          sent: { type: 'integer', minimum: 0 },
          delivered: { type: 'integer', minimum: 0 },
          skipped: {
            type: 'array',
            items: object({ reason: { type: 'string', enum: [...OUTCOMES, ...STEP_OUTCOMES] }, atStep: { type: 'boolean' }, count: { type: 'integer', minimum: 1 } }),
          },
        }),
      }),
    },
    errors: [...ORG_DATA, 'flow_not_found'],
  }),
  messagePreview: operationSchema({
    tag, auth, operationId: 'previewFlowMessage', params: slugOnly,
    summary: "A flow's message rendered against the first row its trigger returns over the last 24 hours; nothing is sent",
    description: "With that contact's profile. With `branches` and `experiment`, the message the run would pick for that row (and `variant`).",
    body: {
      type: 'object',
      additionalProperties: false,
      required: ['trigger', 'message'],
      properties: {
        trigger: { type: 'string', pattern: QUERY_NAME.source },
        message: schemaRef('message', 'Message'),
        branches: { type: 'array', items: schemaRef('message', 'Branch') },
        experiment: { type: 'object' },
        flowName: { type: 'string', minLength: 1, maxLength: 200 },
        variant: { type: 'string', pattern: '^[A-Za-z0-9 _.-]{1,64}$' },
      },
    },
    ok: {
      status: 200,
      description: 'The row and the rendered message; `row` and `rendered` are null and `error` says why when there is no row or the template fails',
      schema: object({ window: object({ from: dateTime, to: dateTime }), row: nullable('object'), rendered: nullable('object'), error: nullable('string') }),
    },
    errors: [...ORG_DATA, 'invalid_json', 'invalid_flow', 'trigger_query_failed', ...SANDBOX],
  }),
  webhookSecret: operationSchema({
    tag, auth, operationId: 'getWebhookSecret', summary: "The key webhook receivers verify the org's signatures with", params: slugOnly,
    ok: { status: 200, description: 'The Standard Webhooks signing secret', schema: object({ secret: { type: 'string', pattern: '^whsec_' } }) },
    errors: ORG_DATA,
  }),
};
