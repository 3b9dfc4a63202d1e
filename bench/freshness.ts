/**
 * Event → profile freshness (SPEC 6.1: "an accepted event shows in the profile within 1 s at p99"),
 * with the real clock: identify events, each giving one imported contact a new unique firstName, are
 * sent at a steady pace; after each one's 200 the contact is polled through the Audience API until it
 * shows that name. Freshness = the answer of the first poll that shows it − the moment the collect
 * request was sent (so it includes the durable log write, compaction and the profile refresh; the
 * poll interval bounds how late it can be seen).
 */
import type { Credentials } from './bodies.js';
import { type Contact, seededRandom } from './contacts.js';

export interface FreshnessOptions {
  url: string;
  /** Where profiles are looked up, when not `url` (another process: the cluster freshness). */
  apiUrl?: string;
  token: string;
  credentials: Credentials;
  contacts: Contact[];
  /** Events to send. */
  events: number;
  /** Events per second (one every 1000/perSecond ms, whatever the previous ones are doing). */
  perSecond: number;
  pollMs: number;
  /** A probe that has not seen its name by then counts as missing. */
  timeoutMs: number;
  tag: string;
}

export interface Freshness {
  n: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  max: number;
  mean: number;
  /** Identify events not answered 200. */
  failed: number;
  /** Accepted events whose name was not seen within timeoutMs. */
  missing: number;
  pollMs: number;
  perSecond: number;
  /** Polls per probe, mean. */
  pollsPerProbe: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const round = (x: number) => Math.round(x * 10) / 10;

/** `o.events` distinct contacts, so two probes in flight never race on the same profile. */
function distinctContacts(o: Pick<FreshnessOptions, 'events' | 'contacts'>, seed: number): Contact[] {
  const random = seededRandom(seed);
  const picked = new Set<number>();
  while (picked.size < Math.min(o.events, o.contacts.length)) picked.add(Math.floor(random() * o.contacts.length));
  return [...picked].map((i) => o.contacts[i]!);
}

/** `probe` for each target, started one every 1000/perSecond ms whatever the earlier ones are doing; resolves once all end. */
async function paced(targets: Contact[], perSecond: number, probe: (contact: Contact, i: number) => Promise<void>): Promise<void> {
  const started = performance.now();
  const running: Array<Promise<void>> = [];
  for (let i = 0; i < targets.length; i++) {
    const wait = started + (i * 1000) / perSecond - performance.now();
    if (wait > 0) await sleep(wait);
    running.push(probe(targets[i]!, i));
  }
  await Promise.all(running);
}

export function measureFreshness(o: FreshnessOptions): Promise<Freshness> {
  return pollProbes(o, 7, {
    event: (contact, i) => ({ clientId: `fresh-${o.tag}-${i}`, type: 'identify', traits: { email: contact.email, firstName: `Fresh${o.tag}${i}` } }),
    field: 'first_name',
    expected: (i) => `Fresh${o.tag}${i}`,
  });
}

/**
 * One event per distinct contact (`event`'s body, with the credentials), paced; after each one's 200 the
 * contact is polled through the Audience API until `field` is `expected`: the delays from each send.
 */
async function pollProbes(
  o: FreshnessOptions,
  seed: number,
  probes: { event: (contact: Contact, i: number) => Record<string, unknown>; field: string; expected: (i: number) => unknown },
): Promise<Freshness> {
  const targets = distinctContacts(o, seed);
  let failed = 0;
  let missing = 0;
  let polls = 0;
  const samples: number[] = [];
  const probe = async (contact: Contact, i: number): Promise<void> => {
    const sent = performance.now();
    const res = await fetch(`${o.url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partnerId: o.credentials.partnerId, partnerSecret: o.credentials.partnerSecret, sentAt: Date.now(), ...probes.event(contact, i) }),
    });
    await res.arrayBuffer();
    if (res.status !== 200) {
      failed++;
      return;
    }
    const lookup = `${o.apiUrl ?? o.url}/audience/v2/contacts?identity=${encodeURIComponent(`email:${contact.email}`)}&fields=${probes.field}`;
    const headers = { authorization: `Bearer ${o.token}`, accept: 'application/json' };
    for (;;) {
      const body = (await (await fetch(lookup, { headers })).json()) as { contact?: Record<string, unknown> };
      const seen = performance.now();
      polls++;
      if (body.contact?.[probes.field] === probes.expected(i)) {
        samples.push(seen - sent);
        return;
      }
      if (seen - sent > o.timeoutMs) {
        missing++;
        return;
      }
      await sleep(o.pollMs);
    }
  };
  await paced(targets, o.perSecond, probe);
  return summarized(o, samples, { failed, missing, polls, probes: targets.length });
}

/** The probes' delays as percentiles, with what failed or went missing. */
function summarized(o: FreshnessOptions, samples: number[], counts: { failed: number; missing: number; polls: number; probes: number }): Freshness {
  samples.sort((a, b) => a - b);
  const at = (q: number) => (samples.length ? samples[Math.min(samples.length - 1, Math.ceil(q * samples.length) - 1)]! : NaN);
  return {
    n: samples.length,
    p50: round(at(0.5)),
    p90: round(at(0.9)),
    p95: round(at(0.95)),
    p99: round(at(0.99)),
    max: round(samples.at(-1) ?? NaN),
    mean: round(samples.reduce((a, b) => a + b, 0) / (samples.length || 1)),
    failed: counts.failed,
    missing: counts.missing,
    pollMs: o.pollMs,
    perSecond: o.perSecond,
    pollsPerProbe: round(counts.polls / (counts.probes || 1)),
  };
}

export interface ReadYourWrites {
  /** Identify → `after=` lookup pairs answered 200 with the identify's name. */
  n: number;
  /** Answered 200 without the name (a stale profile: the promise broken). */
  stale: number;
  /** Answered 409 profile_not_current (the wait ran out), or anything but 200. */
  notCurrent: number;
  failed: number;
  /** The identify's 200 → the `after=` answer (ms). */
  delay: { p50: number; p99: number; max: number };
  /** |meta.lagMs − that delay| (ms): how well the answer's lag says what the pair waited. */
  lagError: { p50: number; p99: number; max: number };
}

/**
 * Read your writes (issue 41): identify events as measureFreshness sends them, each followed at once by
 * one lookup with `after=<its messageId>&wait=5000`: it must answer with the identify's name, and its
 * meta.lagMs is compared with the delay the pair measured.
 */
export async function measureReadYourWrites(o: FreshnessOptions): Promise<ReadYourWrites> {
  const targets = distinctContacts(o, 11);
  let stale = 0;
  let notCurrent = 0;
  let failed = 0;
  const delays: number[] = [];
  const lagErrors: number[] = [];
  const pair = async (contact: Contact, i: number): Promise<void> => {
    const firstName = `Ryw${o.tag}${i}`;
    const res = await fetch(`${o.url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ partnerId: o.credentials.partnerId, partnerSecret: o.credentials.partnerSecret, clientId: `ryw-${o.tag}-${i}`, sentAt: Date.now(), type: 'identify', traits: { email: contact.email, firstName } }),
    });
    const acked = performance.now();
    const { messageId } = (await res.json()) as { messageId?: string };
    if (res.status !== 200 || !messageId) {
      failed++;
      return;
    }
    const lookup = `${o.apiUrl ?? o.url}/audience/v2/contacts?identity=${encodeURIComponent(`email:${contact.email}`)}&fields=first_name&after=${encodeURIComponent(messageId)}&wait=5000`;
    const answer = await fetch(lookup, { headers: { authorization: `Bearer ${o.token}`, accept: 'application/json' } });
    const body = (await answer.json()) as { contact?: { first_name?: unknown }; meta?: { lagMs?: number } };
    const delay = performance.now() - acked;
    if (answer.status !== 200) notCurrent++;
    else if (body.contact?.first_name !== firstName) stale++;
    else {
      delays.push(delay);
      lagErrors.push(Math.abs((body.meta?.lagMs ?? Number.NaN) - delay));
    }
  };
  await paced(targets, o.perSecond, pair);
  const spread = (values: number[]) => {
    values.sort((a, b) => a - b);
    const at = (q: number) => (values.length ? values[Math.min(values.length - 1, Math.ceil(q * values.length) - 1)]! : Number.NaN);
    return { p50: round(at(0.5)), p99: round(at(0.99)), max: round(values.at(-1) ?? Number.NaN) };
  };
  return { n: delays.length, stale, notCurrent, failed, delay: spread(delays), lagError: spread(lagErrors) };
}

/** The trait the trait probes change: how many `trait_probe` events each contact sent. */
export const PROBE_TRAIT = { name: 'probe_count', sql: "SELECT identity AS email, count(*) AS value FROM event_triggers WHERE event_type = 'custom_trait_probe' GROUP BY identity" };

/**
 * Event → trait served (issue 41, "refreshed within 5 s of the events that change it"): with PROBE_TRAIT
 * live and served (the caller saved it), one `trait_probe` event per distinct contact, paced as
 * measureFreshness's identifies, each contact polled until its probe_count is 1. The delay includes the
 * log write, compaction, the trait's run over every stored event of the org, and the profile refresh.
 */
export function measureTraitFreshness(o: FreshnessOptions): Promise<Freshness> {
  return pollProbes(o, 13, {
    event: (contact, i) => ({ clientId: `trait-${o.tag}-${i}`, type: 'track', event: 'custom', properties: { eventName: 'trait_probe' }, traits: { email: contact.email } }),
    field: PROBE_TRAIT.name,
    expected: () => 1,
  });
}
