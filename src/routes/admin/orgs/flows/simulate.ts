/**
 * POST /admin/v1/orgs/{slug}/flows/{id}/simulate (issue 26): what the flow would do now for one contact —
 * its trigger rows over a window, and for each the decision a run would take now with its reason, the
 * variant and the rendered message — sending nothing and recording nothing. The flow as saved, or a draft
 * definition; the live trigger, or the SQL given.
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../../../core/errors.js';
import { readAgainAfterKills } from '../../../../core/unavailable.js';
import type { OrgStore } from '../../../../control/org-store.js';
import type { OrgStorage } from '../../../../db/org-storage.js';
import { microsToIso, newestVisibleAt } from '../../../../events/compaction/visible-at.js';
import type { ProfileIndex } from '../../../../events/profiles/profile-index.js';
import type { FlowDefinition } from '../../../../generated/flow.js';
import { dateTime, object, operationSchema } from '../../../../openapi/route-schema.js';
import type { TriggerRuns } from '../../../../reactions/flows/run/trigger-runs.js';
import type { FlowStore } from '../../../../reactions/flows/store/flow-store.js';
import type { RenderedDecision } from '../../../../reactions/flows/rules/decision.js';
import { journeyOf, type JourneyStep } from '../../../../reactions/flows/rules/journey.js';
import { jsonRow } from '../../../../reactions/triggers/json-row.js';
import { QueryFailed } from '../../../../reactions/triggers/sandbox.js';
import { failedProblem, refusedProblem } from '../../../../reactions/triggers/query-problems.js';
import type { LiveQuery, TriggerStore } from '../../../../reactions/triggers/trigger-store.js';
import { SqlRefused } from '../../../../reactions/triggers/sql-guard.js';
import { contactEmailOf } from '../contact-identity.js';
import { ADMIN, SANDBOX, slugParam } from '../../schema-parts.js';

/** Without `from`, the window is the last day before the newest event, as a message preview's. */
const DEFAULT_WINDOW_HOURS = 24;
/** A simulation reads at most this span (the trigger's run limits hold as well). */
const MAX_WINDOW_DAYS = 31;

interface Body {
  identity: string;
  from?: string;
  to?: string;
  sql?: string;
  definition?: unknown;
}

const decision = object(
  {
    eventId: { type: ['string', 'null'] },
    outcome: {
      type: 'string',
      description:
        'As GET …/decisions (sent, deferred_quiet_hours, holdout, entered (a flow with steps: see waitsIn), duplicate, suppressed, backfill, too_old, unsubscribed, excluded_by_segment, reentry_blocked, frequency_capped, failed, no_identity), ' +
        'or not_in_a_window: a row of the saved flow that became visible before it went live, which no run will read',
    },
    reason: { type: ['string', 'null'] },
    variant: { type: ['string', 'null'] },
    dueAt: { anyOf: [dateTime, { type: 'null' }], description: 'deferred_quiet_hours: when it would be sent' },
    message: { type: ['object', 'null'], additionalProperties: true, description: 'The rendered message (sent and deferred), by channel' },
    branch: { type: ['integer', 'null'], description: 'The index of the branch (in the flow\'s branches) whose message it would send; null: the flow\'s message or a variant\'s own' },
    waitsIn: {
      anyOf: [
        object({ step: { type: 'integer' }, kind: { enum: ['wait', 'waitUntil'] }, until: { type: ['string', 'null'] }, dueAt: dateTime, messagesBefore: { type: 'integer' } }, ['step', 'kind', 'until', 'dueAt', 'messagesBefore']),
        { type: 'null' },
      ],
      description: 'entered (a flow with steps): the first step the entry would wait in, until when at the latest, and how many message steps come before it; null when it would not wait',
    },
    journey: {
      anyOf: [
        {
          type: 'array',
          items: object(
            {
              step: { type: 'integer' },
              kind: { enum: ['wait', 'waitUntil', 'message'] },
              at: { ...dateTime, description: 'The latest the entry reaches the step: every wait before it runs out' },
              until: { anyOf: [dateTime, { type: 'null' }], description: "A wait's end; a waitUntil's timeout" },
              event: { type: ['string', 'null'], description: 'A waitUntil: the event that ends it early' },
              branch: { type: ['integer', 'null'], description: "A message step: the index of its branch that holds on the contact now (null: the step's own message)" },
              branchIfEvent: { type: ['integer', 'null'], description: 'A message step after a waitUntil with then: continue: the branch if that event came' },
            },
            ['step', 'kind', 'at', 'until', 'event', 'branch', 'branchIfEvent'],
          ),
        },
        { type: 'null' },
      ],
      description: "entered (a flow with steps): the path the entry would take from now, each step projected on the contact as stored now (the journey preview); null otherwise",
    },
  },
  ['eventId', 'outcome', 'reason', 'variant', 'dueAt', 'message', 'branch', 'waitsIn', 'journey'],
);

const schema = operationSchema({
  tag: 'Admin: triggers and flows', operationId: 'simulateFlow', auth: 'adminKey',
  summary: 'What the flow would do now for one contact, sending and recording nothing',
  description:
    "The contact's trigger rows over the window (default: the last 24 h before the newest event) and, for each, the decision a run would take now " +
    '(with its reason: segment, consent, caps, quiet hours, re-entry, age, suppression), the variant and the rendered message. ' +
    '`definition`: a draft flow instead of the saved one; `sql`: a trigger version to run instead of the live one.',
  params: { type: 'object', properties: { slug: slugParam, id: { type: 'string' } }, required: ['slug', 'id'] },
  body: object(
    {
      identity: { type: 'string', minLength: 3, examples: ['email:ada@example.com'], description: 'email:<address>, email-hash:<sha256 hex> or user_id:<id>' },
      from: dateTime,
      to: dateTime,
      sql: { type: 'string', minLength: 1, maxLength: 100_000 },
      definition: { type: 'object', description: 'A flow definition (as POST …/flows takes), checked but not saved' },
    },
    ['identity'],
    { additionalProperties: false },
  ),
  ok: {
    status: 200,
    description: 'The simulation',
    schema: object({
      window: object({ from: dateTime, to: dateTime }),
      email: { type: 'string' },
      rows: { type: 'array', items: { type: 'object', additionalProperties: true } },
      decisions: { type: 'array', items: decision },
    }),
  },
  errors: [...ADMIN, 'invalid_request', 'invalid_identity', 'contact_not_found', 'flow_not_found', 'flow_not_triggered', 'invalid_flow', 'invalid_trigger', 'trigger_query_failed', 'profiles_behind', ...SANDBOX],
});

export function registerFlowSimulateRoute(
  app: FastifyInstance,
  deps: {
    storage: OrgStorage;
    orgs: OrgStore;
    flows: FlowStore;
    triggers: TriggerStore;
    runner: TriggerRuns | undefined;
    profiles: ProfileIndex;
    /** A draft definition, checked as a create would check it. */
    check(org: string, body: unknown): Promise<FlowDefinition>;
    /** The context clock: when a wait entered now would end. */
    now: () => number;
    /** TRIGGER_TIMEOUT_MS: how long the simulation is read again after restarts. */
    timeoutMs: number;
  },
): void {
  app.post<{ Params: { slug: string; id: string }; Body: Body }>('/admin/v1/orgs/:slug/flows/:id/simulate', { schema }, async (request) => {
    const org = await deps.orgs.get(request.params.slug);
    const saved = deps.flows.get(org.slug, request.params.id);
    if (!deps.runner) throw new AppError('invalid_request', 'this process does not run flows (ROLES has no flows)');
    const body = request.body;
    const email = contactEmailOf(deps.profiles, org.slug, body.identity);
    const definition = body.definition === undefined ? saved.definition : await deps.check(org.slug, { ...(body.definition as object), id: saved.definition.id });
    notTriggered(definition);
    const trigger = body.sql === undefined ? undefined : await checkedTrigger(deps.triggers, org.slug, body.sql);
    try {
      // Reads only: read again when another org's runaway query had the storage process killed under it.
      const { window, simulation } = await readAgainAfterKills(org.slug, deps.timeoutMs, async () => {
        const window = await windowOf(deps.storage, org.slug, body);
        return { window, simulation: await deps.runner!.simulate(org.slug, definition, email, window, trigger) };
      });
      // A row the flow's cursor has passed is in no run to come: decided then (a duplicate now), or before the flow went live.
      const cursor = body.definition === undefined ? saved.cursor : null;
      const passed = (row: Record<string, unknown>) => cursor !== null && row.ts instanceof Date && BigInt(row.ts.getTime()) * 1000n <= cursor;
      const contact = { ...(deps.profiles.find(org.slug, 'email', email) ?? { email_address: email }) };
      return {
        window: { from: microsToIso(window.start), to: microsToIso(simulation.end) },
        email,
        rows: simulation.rows.map(jsonRow),
        decisions: simulation.decisions.map((d, i) => (passed(simulation.rows[i]!) && d.outcome !== 'duplicate' ? notInAWindow(d, cursor!) : { ...toApi(d, definition, deps.now(), contact), branch: simulation.branches[i] ?? null })),
      };
    } catch (error) {
      if (error instanceof QueryFailed) throw failedProblem(error);
      throw error;
    }
  });
}

/** A scheduled or recurring flow has no trigger window to run or simulate: 409 flow_not_triggered. */
export function notTriggered(flow: FlowDefinition): void {
  if (flow.category !== 'triggered') {
    throw new AppError('flow_not_triggered', `flow ${flow.id} is ${flow.category}: it sends each occurrence at its time (GET …/flows/${flow.id}/occurrences), it has no trigger window to run`);
  }
}

/** The SQL given, checked by the guard as a new version of the flow's trigger would be (nothing recorded). */
async function checkedTrigger(triggers: TriggerStore, org: string, sql: string): Promise<LiveQuery> {
  try {
    const checked = await triggers.check(sql, org, 'trigger');
    // A draft: no version, hash or commit of its own.
    return { version: 0, hash: '', sql, status: 'valid', error: null, committedAt: 0, checked };
  } catch (error) {
    if (error instanceof SqlRefused) throw refusedProblem(error);
    throw error;
  }
}

async function windowOf(storage: OrgStorage, org: string, body: Body): Promise<{ start: bigint; end: bigint }> {
  const micros = (iso: string, member: string) => {
    const ms = Date.parse(iso);
    if (!Number.isFinite(ms)) throw new AppError('invalid_request', `${member} must be an ISO-8601 time`);
    return BigInt(ms) * 1000n;
  };
  const end = body.to === undefined ? await newestVisibleAt(storage.org(org)) : micros(body.to, 'to');
  const start = body.from === undefined ? end - BigInt(DEFAULT_WINDOW_HOURS * 3600) * 1_000_000n : micros(body.from, 'from');
  if (start >= end) throw new AppError('invalid_request', 'from must be before to');
  if (end - start > BigInt(MAX_WINDOW_DAYS * 86_400) * 1_000_000n) throw new AppError('invalid_request', `a simulation reads at most ${MAX_WINDOW_DAYS} days: narrow from/to`);
  return { start, end };
}

/** A row at or before the cursor that no run decided: it became visible before the flow went live. */
function notInAWindow(d: RenderedDecision, cursor: bigint) {
  const reason = `the event became visible before the flow went live (its runs read after ${microsToIso(cursor)}): no run will decide it`;
  return { eventId: d.eventId, outcome: 'not_in_a_window', reason, variant: null, dueAt: null, message: null, branch: null, waitsIn: null, journey: null };
}

function toApi(d: RenderedDecision, flow: FlowDefinition, now: number, contact: Record<string, unknown>) {
  const message = d.outcome === 'sent' || d.outcome === 'deferred_quiet_hours' ? d.message : null;
  const journey = d.outcome === 'entered' ? journeyOf(flow, d.data, contact, now) : null;
  return {
    eventId: d.eventId,
    outcome: d.outcome,
    reason: d.reason,
    variant: d.variant,
    dueAt: d.outcome === 'deferred_quiet_hours' ? new Date(d.dueAt).toISOString() : null,
    message,
    waitsIn: journey ? firstWait(journey) : null,
    journey,
  };
}

/** Where the journey waits first: the step, what ends it, when at the latest, and how many message steps come before. */
function firstWait(journey: JourneyStep[]) {
  const wait = journey.find((s) => s.kind !== 'message');
  if (wait === undefined || wait.kind === 'message') return null;
  return { step: wait.step, kind: wait.kind, until: wait.event, dueAt: wait.until!, messagesBefore: wait.step };
}
