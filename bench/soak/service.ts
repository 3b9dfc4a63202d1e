/**
 * The service under soak: a child process (`dist/src/server.js`) on a DATA_DIR that outlives it, started
 * again after each kill; its storage process found in /proc; and the orgs, contacts, trigger and flow the
 * soak drives, made through the admin API as a user would.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { Child, freePort, tail } from '../procs.js';

export const ADMIN_KEY = 'soak-admin-key-0123456789abcdef0123456';

export interface SoakService {
  url: string;
  child: Child;
}

export interface ServiceOptions {
  root: string;
  workDir: string;
  dataDir: string;
  env: NodeJS.ProcessEnv;
}

/** A start takes 5–15 s here; on a 2-core machine with every core busy (the soak's own busy loops beside
 *  other work) starts of over 100 s were seen. */
const START_TIMEOUT_MS = 300_000;

/**
 * Starts the service and waits until it is ready. The port is picked free and handed over, so another
 * process on the machine may take it in between (tests and benchmarks start servers all the time): a
 * process that exits at start is started again on another port, and "ready" is asked with this run's admin
 * key, which no other service answers.
 */
export async function startService(options: ServiceOptions, generation: number): Promise<SoakService> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startOnce(options, generation);
    } catch (error) {
      if (!(error instanceof ExitedAtStart) || attempt === 3) throw error;
    }
  }
}

class ExitedAtStart extends Error {}

async function startOnce(options: ServiceOptions, generation: number): Promise<SoakService> {
  const port = await freePort();
  const child = Child.start(`service-${generation}`, join(options.root, 'dist/src/server.js'), {
    cwd: options.root,
    logFile: join(options.workDir, 'service.log'),
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', DATA_DIR: options.dataDir, ADMIN_KEY, LOG_LEVEL: 'warn', NATS_URL: '', ...options.env },
  });
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (!child.running) throw new ExitedAtStart(`the service exited during start:\n${tail(child.logFile, 30)}`);
    const ready = await fetch(`${url}/readyz`).then((r) => (void r.arrayBuffer(), r.status === 200), () => false);
    if (ready && (await admin(url, 'GET', '/admin/v1/orgs').then((r) => r.status === 200, () => false))) return { url, child };
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`the service was not ready within ${START_TIMEOUT_MS / 1000} s:\n${tail(child.logFile, 30)}`);
    }
    await sleep(100);
  }
}

/** The service's storage process: the tests' helper, one implementation. */
export { storagePid } from '../../test/helpers/storage-pid.js';

export async function admin<T = unknown>(url: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: T }> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, json: (text ? JSON.parse(text) : undefined) as T };
}

async function must<T>(call: Promise<{ status: number; json: T }>, what: string, ok: number[] = [200, 201]): Promise<T> {
  const { status, json } = await call;
  if (!ok.includes(status)) throw new Error(`${what}: ${status} ${JSON.stringify(json)}`);
  return json;
}

export interface SoakContact {
  email: string;
  zone: string;
  /** Inside the org's quiet hours (00:30–11:30 local) for the whole soak: must get nothing. */
  quiet: boolean;
}

export interface SoakOrg {
  slug: string;
  partnerId: string;
  partnerSecret: string;
  token: string;
  contacts: SoakContact[];
}

/** Quiet hours of every soak org, in each contact's zone; and the cap on sends per contact. */
export const QUIET = { start: '00:00', end: '12:00' };
export const CAP = { maxSends: 3, withinSeconds: 3600 };
export const TRIGGER_EVENT = 'soak_trigger';
const TRIGGER_SQL = `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = 'custom_${TRIGGER_EVENT}'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;

/** An org as a user makes it: credentials, the Audience API and a token, quiet hours, a cap, a trigger and a live webhook flow. */
export async function makeOrg(url: string, slug: string, hookUrl: string, contacts: SoakContact[]): Promise<SoakOrg> {
  const created = await must(
    admin<{ credentials: { production: { partnerId: string; partnerSecret: string } } }>(url, 'POST', '/admin/v1/orgs', {
      slug,
      name: `Soak ${slug}`,
      audienceApi: true,
      rateLimit: 100_000,
    }),
    `create org ${slug}`,
  );
  await must(admin(url, 'PATCH', `/admin/v1/orgs/${slug}`, { quietHours: { ...QUIET, timeZone: 'contact' }, timeZone: 'UTC', frequencyCaps: [CAP] }), 'quiet hours and caps');
  const { token } = await must(admin<{ token: string }>(url, 'POST', `/admin/v1/orgs/${slug}/tokens`, { createdBy: 'soak@example.com' }), 'token');
  await must(admin(url, 'PUT', `/admin/v1/orgs/${slug}/triggers/${TRIGGER_EVENT}`, { sql: TRIGGER_SQL }), 'trigger');
  await must(
    admin(url, 'POST', `/admin/v1/orgs/${slug}/flows`, {
      id: 'soak',
      name: 'Soak follow-up',
      category: 'triggered',
      entry: 'when_contact_triggers_event',
      trigger: TRIGGER_EVENT,
      realTime: true,
      message: { channel: 'webhook', url: hookUrl, template: { body: `{"email": "{{ contact.email_address }}", "org": "${slug}"}` } },
    }),
    'flow',
  );
  await must(admin(url, 'POST', `/admin/v1/orgs/${slug}/flows/soak/start`), 'start flow');
  const { partnerId, partnerSecret } = created.credentials.production;
  return { slug, partnerId, partnerSecret, token, contacts };
}

/** Local hour (fractional) of `at` in `zone`. */
export function localHour(at: number, zone: string): number {
  const parts = new Intl.DateTimeFormat('en-GB', { timeZone: zone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }).formatToParts(at);
  const value = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return value('hour') + value('minute') / 60;
}

/** Zones whose local time stays inside quiet hours (with half an hour to spare), and outside them, from `from` to `to`. */
export function zonesFor(from: number, to: number): { quiet: string[]; open: string[] } {
  const quiet: string[] = [];
  const open: string[] = [];
  for (const zone of Intl.supportedValuesOf('timeZone')) {
    const [a, b] = [localHour(from, zone), localHour(to, zone)];
    if (b < a) continue; // midnight in between
    if (a >= 0.5 && b <= 11.5) quiet.push(zone);
    else if (a >= 12.5 && b <= 23.5) open.push(zone);
  }
  return { quiet, open };
}

/** A contact's clientId (at most 45 characters, whatever the address). */
export function clientIdOf(email: string): string {
  return `c-${createHash('sha256').update(email).digest('hex').slice(0, 24)}`;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
