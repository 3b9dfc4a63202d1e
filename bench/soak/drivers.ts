/**
 * The soak's load: partners sending single events and batches, a personalization service looking
 * contacts up, a data engineer previewing the trigger. Every answer is tallied by driver and status; every
 * event answered 200 is remembered by org, to be found in the org's database at the end.
 */
import { ADMIN_KEY, type SoakContact, type SoakOrg, TRIGGER_EVENT, clientIdOf, sleep } from './service.js';

/** The service's address now (it changes at each restart), and whether a fault has it down. */
export interface Target {
  url: string;
  down: boolean;
}

export class Tally {
  /** driver → status ("200", "503", "unreachable", "timeout") → count. */
  readonly answers = new Map<string, Map<string, number>>();
  /** org → messageIds answered 200. */
  readonly acked = new Map<string, Set<string>>();
  /** 5xx answers and failures while the service was meant to be up: a sample each, with when (s into the run). */
  readonly problems: string[] = [];
  /** driver → how long each answer took (ms). */
  readonly latencies = new Map<string, number[]>();
  /** Answers that took over SLOW_MS: when (s into the run), which, how long. */
  readonly slow: string[] = [];
  /** Reads answered 503 storage_unavailable (restarts one after another in their flight): when asked and answered (epoch ms). */
  readonly restarted: Array<{ driver: string; asked: number; answered: number }> = [];
  private readonly started = performance.now();

  count(driver: string, status: string): void {
    const byStatus = this.answers.get(driver) ?? new Map<string, number>();
    byStatus.set(status, (byStatus.get(status) ?? 0) + 1);
    this.answers.set(driver, byStatus);
  }

  ack(org: string, ids: string[]): void {
    const set = this.acked.get(org) ?? new Set<string>();
    for (const id of ids) set.add(id);
    this.acked.set(org, set);
  }

  problem(text: string): void {
    if (this.problems.length < 200) this.problems.push(`[${this.elapsed()} s] ${text}`);
  }

  took(driver: string, path: string, ms: number): void {
    const list = this.latencies.get(driver) ?? [];
    list.push(ms);
    this.latencies.set(driver, list);
    if (ms > SLOW_MS && this.slow.length < 200) this.slow.push(`[${this.elapsed(ms)} s] ${driver} ${path.split('?')[0]} took ${(ms / 1000).toFixed(1)} s`);
  }

  /** Seconds into the run, `agoMs` before now. */
  private elapsed(agoMs = 0): number {
    return Math.round((performance.now() - agoMs - this.started) / 1000);
  }
}

/** An answer slower than this is listed (with when it was asked) in the report's JSON. */
const SLOW_MS = 10_000;

export interface DriverContext {
  target: Target;
  orgs: SoakOrg[];
  tally: Tally;
  random: () => number;
  /** Set when the drivers are to stop. */
  stopped: () => boolean;
}

const REQUEST_TIMEOUT_MS = 30_000;

function pick<T>(items: readonly T[], random: () => number): T {
  return items[Math.floor(random() * items.length)]!;
}

/** One event of a contact: mostly plain custom events, some that trigger the flow, a few identifies. */
function event(contact: SoakContact, messageId: string, random: () => number): Record<string, unknown> {
  const base = { clientId: clientIdOf(contact.email), sentAt: Date.now(), messageId, context: { debug: true }, traits: { email: contact.email } };
  const roll = random();
  if (roll < 0.05) return { ...base, type: 'identify', traits: { email: contact.email, timezone: contact.zone, firstName: `F${messageId.length}` } };
  const name = roll < 0.2 ? TRIGGER_EVENT : 'soak_event';
  return { ...base, type: 'track', event: 'custom', properties: { eventName: name, properties: { n: messageId, price: Math.round(random() * 10_000) / 100 } } };
}

/** One request; its answer tallied. Returns the status, or undefined when there was no answer. */
async function call(ctx: DriverContext, driver: string, path: string, init: RequestInit): Promise<{ status: number; body: string } | undefined> {
  // While the service is down its port may be anyone's: nothing is sent until it is back.
  while (ctx.target.down && !ctx.stopped()) await sleep(100);
  const wasDown = ctx.target.down;
  const asked = performance.now();
  const askedAt = Date.now();
  try {
    const res = await fetch(`${ctx.target.url}${path}`, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const body = await res.text();
    ctx.tally.took(driver, path, performance.now() - asked);
    // A read the storage process's restarts kept from finishing: checked against the faults at the end.
    if (res.status === 503 && body.includes('"code":"storage_unavailable"')) {
      ctx.tally.count(driver, 'storage_unavailable');
      ctx.tally.restarted.push({ driver, asked: askedAt, answered: Date.now() });
      return { status: res.status, body };
    }
    ctx.tally.count(driver, String(res.status));
    if (res.status >= 500) ctx.tally.problem(`${driver} ${path.split('?')[0]}: ${res.status} ${body.slice(0, 300)}`);
    return { status: res.status, body };
  } catch (error) {
    const timeout = (error as Error).name === 'TimeoutError';
    if (timeout) ctx.tally.took(driver, path, performance.now() - asked);
    const during = wasDown || ctx.target.down;
    ctx.tally.count(driver, timeout ? 'timeout' : during ? 'unreachable' : 'error');
    if (!during) ctx.tally.problem(`${driver} ${path.split('?')[0]}: ${String(error)} ${String((error as Error).cause ?? '')}`);
    await sleep(100);
    return undefined;
  }
}

export async function collectDriver(ctx: DriverContext, index: number): Promise<void> {
  for (let n = 0; !ctx.stopped(); n++) {
    const org = pick(ctx.orgs, ctx.random);
    const messageId = `${org.slug}-c${index}-${n}`;
    const body = { partnerId: org.partnerId, partnerSecret: org.partnerSecret, ...event(pick(org.contacts, ctx.random), messageId, ctx.random) };
    const answer = await call(ctx, 'collect', '/http/v1/collect', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (answer?.status === 200) ctx.tally.ack(org.slug, [messageId]);
  }
}

export async function batchDriver(ctx: DriverContext, size: number): Promise<void> {
  for (let n = 0; !ctx.stopped(); n++) {
    const org = pick(ctx.orgs, ctx.random);
    const ids = Array.from({ length: size }, (_, i) => `${org.slug}-b${n}-${i}`);
    const batch = ids.map((id) => event(pick(org.contacts, ctx.random), id, ctx.random));
    const body = { partnerId: org.partnerId, partnerSecret: org.partnerSecret, batch };
    const answer = await call(ctx, 'batch', '/http/v1/batch', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    if (answer?.status === 200) ctx.tally.ack(org.slug, ids);
  }
}

export async function lookupDriver(ctx: DriverContext): Promise<void> {
  while (!ctx.stopped()) {
    const org = pick(ctx.orgs, ctx.random);
    const contact = pick(org.contacts, ctx.random);
    await call(ctx, 'lookup', `/audience/v2/contacts?identity=${encodeURIComponent(`email:${contact.email}`)}`, {
      headers: { authorization: `Bearer ${org.token}`, accept: 'application/json' },
    });
  }
}

export async function previewDriver(ctx: DriverContext): Promise<void> {
  while (!ctx.stopped()) {
    const org = pick(ctx.orgs, ctx.random);
    await call(ctx, 'preview', `/admin/v1/orgs/${org.slug}/triggers/${TRIGGER_EVENT}/preview`, {
      method: 'POST',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ limit: 100 }),
    });
    await sleep(500);
  }
}
