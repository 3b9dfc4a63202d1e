/**
 * How fresh an Audience API answer is (issue 41, docs/audience-api.md "How fresh is an answer"): the
 * `meta` every contact answer carries, and read-your-writes — `after=<messageId>` answers only once that
 * event is reflected, waiting up to `wait` ms, else 409 profile_not_current. An id this org never
 * acknowledged (another org's among them) waits the same and gets the same 409: "not yet" and "never"
 * look alike, so nothing is learnt of other orgs' ids.
 */
import type { FastifyRequest } from 'fastify';
import type { ShardRelay } from '../../cluster/relay-to-shard.js';
import { isRelayed } from '../../cluster/replay-request.js';
import { AppError } from '../../core/errors.js';
import type { Freshness } from '../../events/profiles/freshness.js';
import type { IndexedProfile, Profile } from '../../events/profiles/profile-index.js';
import { dateTime, object } from '../../openapi/route-schema.js';

export const DEFAULT_WAIT_MS = 1000;
export const MAX_WAIT_MS = 5000;
const MAX_MESSAGE_ID = 512;

export const AFTER_DESCRIPTION =
  'Read your writes: answer only once the event with this messageId (acknowledged by this org) is reflected, ' +
  `waiting up to \`wait\` ms; else 409 \`profile_not_current\` with Retry-After (an unknown messageId is answered the same)`;
export const WAIT_DESCRIPTION = `With \`after\`: how long to wait for it, in ms (default ${DEFAULT_WAIT_MS}, at most ${MAX_WAIT_MS})`;

export const META_SCHEMA = object(
  {
    eventsThrough: { anyOf: [dateTime, { type: 'null' }], description: "Receipt time of this contact's newest event folded into the answer (null: none)" },
    computedAt: { ...dateTime, description: 'When the answer was built' },
    lagMs: { type: 'integer', minimum: 0, description: "Receipt time of the org's newest acknowledged event less that of its newest event folded into profiles, at answer time" },
  },
  ['eventsThrough', 'computedAt', 'lagMs'],
);

/**
 * The relay to the org's shard when this process cannot tell whether an event is reflected (an `api`
 * process beside separate storage shards, NATS mode) and the call asks it (`after`): that shard answers
 * the whole call from the profiles it keeps, where "reflected" is known. Undefined: answer here.
 */
export function shardForAfter(request: FastifyRequest, freshness: Freshness, relay: ShardRelay | undefined, org: string, after: unknown): ShardRelay | undefined {
  // A relayed call is answered where it arrived, never sent on again.
  return after !== undefined && relay !== undefined && !freshness.canReflect(org) && !isRelayed(request) ? relay : undefined;
}

/** `after` and `wait` as given (query strings, or members of a batch body): checked, then waited for. */
export async function waitForAfter(freshness: Freshness, org: string, after: unknown, wait: unknown): Promise<void> {
  if (after === undefined) {
    if (wait !== undefined) throw new AppError('invalid_request', 'wait is for after=<messageId>: give both, or neither');
    return;
  }
  if (typeof after !== 'string' || after.length === 0 || after.length > MAX_MESSAGE_ID) {
    throw new AppError('invalid_request', `after must be one messageId of 1 to ${MAX_MESSAGE_ID} characters (the one your event was acknowledged with)`);
  }
  const waitMs = wait === undefined ? DEFAULT_WAIT_MS : typeof wait === 'number' ? wait : typeof wait === 'string' && /^\d{1,4}$/.test(wait) ? Number(wait) : Number.NaN;
  if (!Number.isInteger(waitMs) || waitMs < 0 || waitMs > MAX_WAIT_MS) {
    throw new AppError('invalid_request', `wait must be a whole number of milliseconds from 0 to ${MAX_WAIT_MS}`);
  }
  if (!freshness.canReflect(org)) {
    // A process without the org's compactor and without NATS to reach the one that has it cannot tell.
    throw new AppError(
      'profile_not_current',
      'this process keeps no compactor for this org and no NATS to reach one, so it cannot tell whether an event is in the profiles: send lookups with after= to a process whose ROLES include compactor (docs/operators.md "Running many processes")',
      { headers: { 'Retry-After': '1' } },
    );
  }
  if (await freshness.reflects(org, after, waitMs)) return;
  const retryAfter = Math.max(1, Math.ceil(freshness.lagMs(org) / 1000));
  throw new AppError(
    'profile_not_current',
    `the profiles do not reflect messageId ${JSON.stringify(after)} after ${waitMs} ms (or this org acknowledged no event with it): retry after ${retryAfter} s, or with a longer wait`,
    { headers: { 'Retry-After': String(retryAfter) } },
  );
}

export interface Meta {
  eventsThrough: string | null;
  computedAt: string;
  lagMs: number;
}

/** The receipt time of the contact's newest event in the profile (`last_seen_at`), or null. */
function eventsThrough(profile: Profile): string | null {
  const through = profile.last_seen_at;
  return typeof through === 'string' ? through : null;
}

/** The answer's `meta`. */
export function metaOf(profile: Profile, computedAt: string, lagMs: number): Meta {
  return { eventsThrough: eventsThrough(profile), computedAt, lagMs };
}

/** The last tail made: lookups in the same millisecond with the same lag share it (no Date, no string). */
let lastTail = { at: Number.NaN, lagMs: Number.NaN, json: '' };

/** What every `meta` of one answer shares (a batch's entries too), as the end of its JSON: built at `now` (epoch ms). */
export function metaTail(now: number, lagMs: number): string {
  if (now !== lastTail.at || lagMs !== lastTail.lagMs) lastTail = { at: now, lagMs, json: `,"computedAt":"${new Date(now).toISOString()}","lagMs":${lagMs}}` };
  return lastTail.json;
}

/** The start of `metaOf` as JSON, what is the contact's own: `metaHead(contact) + metaTail(…)` is the whole. */
export function metaHead(contact: IndexedProfile): string {
  return `{"eventsThrough":${JSON.stringify(eventsThrough(contact.profile))}`;
}

/** `metaOf` as JSON, written out. */
export function metaJson(contact: IndexedProfile, tail: string): string {
  return metaHead(contact) + tail;
}
