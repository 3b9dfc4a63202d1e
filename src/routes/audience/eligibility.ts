/**
 * GET /audience/v2/contacts/eligibility?identity=<type>:<value>&flow=<flowId> (issue 41): what a run of
 * the flow would decide for this contact now if its trigger fired — eligible or not, the outcome a run
 * would record, why, and the experiment variant a real send records — so a page shows what the e-mail
 * says. Only for flows whose definition has `"exposeEligibility": true`; any other id (another org's, an
 * archived flow's, an unknown one) is the same 404 flow_not_found. Nothing is recorded or counted
 * (reactions/flows/run/eligibility.ts).
 */
import type { FastifyInstance } from 'fastify';
import { AppError } from '../../core/errors.js';
import { OrgUnavailable, readAgainAfterKills } from '../../core/unavailable.js';
import type { OrgStorage } from '../../db/org-storage.js';
import { newestVisibleAt } from '../../events/compaction/visible-at.js';
import type { Freshness } from '../../events/profiles/freshness.js';
import type { ProfileIndex } from '../../events/profiles/profile-index.js';
import { acceptsJson } from '../../http/accepts-json.js';
import { object, operationSchema, validatedAs } from '../../openapi/route-schema.js';
import { OUTCOMES } from '../../reactions/flows/rules/decision.js';
import type { TriggerRuns } from '../../reactions/flows/run/trigger-runs.js';
import type { FlowStore } from '../../reactions/flows/store/flow-store.js';
import { QueryFailed } from '../../reactions/triggers/sandbox.js';
import { failedProblem } from '../../reactions/triggers/query-problems.js';
import type { Context } from '../../core/context.js';
import type { ShardRelay } from '../../cluster/relay-to-shard.js';
import { isRelayed } from '../../cluster/replay-request.js';
import { findContact, IDENTITY_DESCRIPTION, INVALID_IDENTITY, NO_BODY, RATE_LIMIT_HEADERS } from './contacts.js';
import { META_SCHEMA, metaJson, metaTail } from './fresh.js';

/** Without a run yet, a segment is read over the last day, as a simulation's default window. */
const FIRST_WINDOW_MICROS = 24n * 3600n * 1_000_000n;

interface Query {
  identity?: string | string[];
  flow?: string | string[];
}

const schema = operationSchema({
  tag: 'Audience API',
  summary: 'What a flow would decide for one contact now (flows with exposeEligibility)',
  description:
    'The decision a run of the flow would record for this contact if its trigger fired now — the same rules in the same order (suppression, consent, segment, ' +
    're-entry, experiment, caps, quiet hours) — and the variant a real send records (assignment is deterministic per contact and flow). ' +
    '`eligible` is true when the outcome messages the contact (`sent`, `deferred_quiet_hours`, or `entered` for a flow with steps). ' +
    'Nothing is recorded or counted. Only flows whose definition has `"exposeEligibility": true`; any other id is 404 `flow_not_found`.',
  operationId: 'getAudienceEligibility',
  auth: 'audienceToken',
  querystring: {
    type: 'object',
    required: ['identity', 'flow'],
    properties: {
      identity: { type: 'string', minLength: 3, description: IDENTITY_DESCRIPTION },
      flow: { type: 'string', minLength: 1, maxLength: 64, description: 'The flow id' },
    },
  },
  ok: {
    status: 200,
    description: 'What a run would decide now',
    headers: RATE_LIMIT_HEADERS,
    schema: object(
      {
        status: { const: 'success' },
        flow: { type: 'string' },
        eligible: { type: 'boolean' },
        outcome: { enum: OUTCOMES.filter((o) => o !== 'no_identity' && o !== 'failed' && o !== 'duplicate' && o !== 'backfill' && o !== 'too_old') },
        reason: { type: ['string', 'null'] },
        variant: { type: ['string', 'null'], description: "The experiment variant's label (a holdout's too); null without an experiment or when no variant is drawn" },
        meta: META_SCHEMA,
      },
      ['status', 'flow', 'eligible', 'outcome', 'reason', 'variant', 'meta'],
    ),
  },
  errors: ['invalid_token', 'audience_api_not_enabled', 'rate_limited', 'not_acceptable', 'invalid_identity', 'invalid_request', 'contact_not_found', 'flow_not_found', 'profiles_behind', 'trigger_query_failed', 'org_unavailable', 'shard_unavailable'],
});

export interface EligibilityRouteDeps {
  ctx: Context;
  profiles: ProfileIndex;
  freshness: Freshness;
  /** Present where this process runs the org's flows. */
  flows: FlowStore | undefined;
  runner: TriggerRuns | undefined;
  storage: OrgStorage | undefined;
  /** Whether this process keeps the org's database (and so, with flows, runs its flows). */
  owns(org: string): boolean;
  /** NATS mode: the shards; the one that keeps the org answers where this process does not run its flows. */
  relay?: ShardRelay;
  /** TRIGGER_TIMEOUT_MS: how long a decision is read again after storage restarts. */
  triggerTimeoutMs: number;
}

export function registerEligibilityRoute(app: FastifyInstance, deps: EligibilityRouteDeps): void {
  const { profiles, freshness } = deps;
  app.get<{ Querystring: Query }>('/audience/v2/contacts/eligibility', { schema, validatorCompiler: validatedAs({ querystring: null }) }, async (request, reply) => {
    const org = request.audienceOrg;
    if (!org) throw new Error('the Audience API routes were registered without their audienceAuth hook');
    if (!acceptsJson(request.headers.accept)) throw new AppError('not_acceptable', 'this API answers application/json only');
    const { identity, flow: flowId } = request.query;
    if (typeof identity !== 'string') throw new AppError('invalid_identity', `pass exactly one identity=<type>:<value>: ${INVALID_IDENTITY}`);
    if (typeof flowId !== 'string' || flowId.length === 0) throw new AppError('invalid_request', 'pass exactly one flow=<flow id>');
    const { flows, runner, storage } = deps;
    if (!flows || !runner || !storage || !deps.owns(org.slug)) {
      // A relayed call is answered where it arrived, never sent on again.
      if (deps.relay && !isRelayed(request)) return deps.relay.send(request, reply, { slug: org.slug, body: NO_BODY, org: 'your org' });
      throw new AppError('flow_not_found', "this process does not run this org's flows (ROLES has no flows, or another shard keeps the org): ask a process that does");
    }
    const contact = findContact(profiles.finder(org.slug), identity);
    if (contact === null) throw new AppError('invalid_identity', INVALID_IDENTITY);
    const flow = flows.find(org.slug, flowId);
    if (!flow || flow.status === 'archived' || flow.definition.exposeEligibility !== true || flow.definition.category !== 'triggered') {
      throw new AppError('flow_not_found', `no flow "${flowId}" of this org answers eligibility lookups (its definition needs "exposeEligibility": true)`);
    }
    if (!contact) {
      if (profiles.isUnavailable(org.slug)) throw new OrgUnavailable(org.slug, 'its profiles could not be loaded');
      throw new AppError('contact_not_found', 'no contact with this identity', { status: org.notFoundStatus });
    }
    const email = contact.profile.email_address as string;
    const window = async () => {
      const end = await newestVisibleAt(storage.org(org.slug));
      return { start: flow.cursor ?? end - FIRST_WINDOW_MICROS, end };
    };
    try {
      const decided = await readAgainAfterKills(org.slug, deps.triggerTimeoutMs, () => runner.eligibility(org.slug, flow.definition, email, window));
      reply.type('application/json; charset=utf-8');
      const meta = metaJson(contact, metaTail(deps.ctx.clock.now(), freshness.lagMs(org.slug)));
      return `{"status":"success","flow":${JSON.stringify(flowId)},"eligible":${decided.eligible},"outcome":"${decided.outcome}","reason":${JSON.stringify(decided.reason)},"variant":${JSON.stringify(decided.variant)},"meta":${meta}}`;
    } catch (error) {
      if (error instanceof QueryFailed) throw failedProblem(error);
      throw error;
    }
  });
}
