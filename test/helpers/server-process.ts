/**
 * The real service as a child process (the build, or src/ through tsx: entry.ts), for tests that kill -9 it.
 * Each spawn listens on a fresh free port on 127.0.0.1; the caller passes DATA_DIR (and NATS_URL).
 * NATS_URL is cleared unless given, so an embedded-mode test never picks up the machine's NATS.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { freePort } from './free-port.js';
import { ADMIN_KEY } from './app.js';
import { entryArgs } from './entry.js';
import { scaled } from './deadline.js';
import { ROOT } from './paths.js';

export { ADMIN_KEY };

/** Start-up budget on a quiet machine (the build starts in ~1 s; tsx in ~3 s); scaled by TEST_TIME_SCALE. */
const START_TIMEOUT_MS = 30_000;
/** Longer than the service's own SHUTDOWN_TIMEOUT_MS (25 s): a close it gives up on exits 1, and is reported so. */
const STOP_TIMEOUT_MS = 30_000;

interface Tap {
  teardown(fn: () => unknown): void;
}

export interface ServerProcess {
  url: string;
  port: number;
  pid: number;
  /** SIGKILL, like a crash; resolves once the process is gone. */
  kill9(): Promise<void>;
  /** SIGTERM (graceful shutdown); resolves once the process exited, rejects if it exited non-zero. */
  stop(): Promise<void>;
  /** Resolves when the process exits by itself (or is stopped). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The last 16 KB the child wrote to stderr. */
  stderr(): string;
}

export async function spawnServer(t: Tap, env: Record<string, string>, options: { startTimeoutMs?: number } = {}): Promise<ServerProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, entryArgs('server'), {
    cwd: ROOT,
    env: {
      ...process.env,
      NATS_URL: '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'warn',
      ADMIN_KEY,
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  const keep = (chunk: Buffer): void => {
    stderr = (stderr + chunk.toString()).slice(-16_000);
  };
  child.stderr!.on('data', keep);
  // pino writes to stdout; warnings and errors are worth keeping for failure messages too.
  child.stdout!.on('data', keep);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const alive = (): boolean => child.exitCode === null && child.signalCode === null;
  const kill9 = async (): Promise<void> => {
    if (alive()) child.kill('SIGKILL');
    await exited;
  };
  t.teardown(kill9);

  const url = `http://127.0.0.1:${port}`;
  const startTimeoutMs = scaled(options.startTimeoutMs ?? START_TIMEOUT_MS);
  const deadline = Date.now() + startTimeoutMs;
  for (;;) {
    if (!alive()) {
      const { code, signal } = await exited;
      throw new Error(`audience server exited during start (code ${code}, signal ${signal}):\n${stderr}`);
    }
    if (await healthy(url)) break;
    if (Date.now() > deadline) {
      await kill9();
      throw new Error(`audience server not healthy on ${url} within ${startTimeoutMs} ms:\n${stderr}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }

  return {
    url,
    port,
    pid: child.pid!,
    kill9,
    exited,
    async stop() {
      if (alive()) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), scaled(STOP_TIMEOUT_MS));
      const { code, signal } = await exited;
      clearTimeout(timer);
      if (code !== 0) throw new Error(`audience server did not stop cleanly (code ${code}, signal ${signal}):\n${stderr}`);
    },
    stderr: () => stderr,
  };
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(scaled(1_000)) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

export { freePort };

/** GET /metrics of a service on PORT, as Prometheus scrapes it there: with the admin key. */
export async function scrapeMetrics(url: string, init: { signal?: AbortSignal } = {}): Promise<string> {
  const res = await fetch(`${url}/metrics`, { ...init, headers: { authorization: `Bearer ${ADMIN_KEY}` } });
  if (!res.ok) throw new Error(`${url}/metrics: ${res.status} ${await res.text()}`);
  return res.text();
}

/** An admin API call over HTTP; throws on an answer of 300 or more. */
export async function adminCall(url: string, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  const res = await fetch(`${url}${path}`, {
    method,
    headers: { authorization: `Bearer ${ADMIN_KEY}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

export interface Credential {
  partnerId: string;
  partnerSecret: string;
}

/** POST /admin/v1/orgs over HTTP; returns the production credential. */
export async function createOrgOverHttp(url: string, slug: string): Promise<Credential> {
  const res = await fetch(`${url}/admin/v1/orgs`, {
    method: 'POST',
    headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
    body: JSON.stringify({ slug, name: slug }),
  });
  const body = await res.text();
  if (res.status !== 201) throw new Error(`createOrg ${slug}: ${res.status} ${body}`);
  return (JSON.parse(body) as { credentials: { production: Credential } }).credentials.production;
}

/**
 * Waits until the compactor has caught up with everything appended before this call: appends a
 * sentinel event (the log is ordered) and polls the admin event types until it shows up in DuckDB.
 */
export async function waitForCompaction(url: string, slug: string, cred: Credential, timeoutMs = 20_000): Promise<void> {
  const eventName = `drain_${Date.now()}_${Math.floor(Math.random() * 1e6)}`;
  const res = await fetch(`${url}/http/v1/collect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ...cred,
      clientId: 'drain',
      sentAt: Date.now(),
      type: 'track',
      event: 'custom',
      messageId: eventName,
      properties: { eventName, properties: {} },
      traits: { email: 'drain@example.com' },
    }),
  });
  if (res.status !== 200) throw new Error(`sentinel event: ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
  const budget = scaled(timeoutMs);
  const deadline = Date.now() + budget;
  for (;;) {
    const types = await fetch(`${url}/admin/v1/orgs/${slug}/events/types?env=production`, {
      headers: { authorization: `Bearer ${ADMIN_KEY}` },
    });
    const body = (await types.json()) as { types?: Array<{ eventType: string }> };
    if (body.types?.some((type) => type.eventType === `custom_${eventName}`)) return;
    if (Date.now() > deadline) throw new Error(`compaction did not catch up within ${budget} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * The split layout on one NATS (`env` names NATS_URL and whatever else every process shares): storage
 * shards 0/2 and 1/2 (`compactor,flows`) and a front process without org databases (`frontRoles`), each
 * with its own DATA_DIR under `root`.
 */
export async function spawnSplitLayout(t: Tap, root: string, env: Record<string, string>, frontRoles = 'collector,api'): Promise<{ shards: ServerProcess[]; front: ServerProcess }> {
  const shards: ServerProcess[] = [];
  for (const index of [0, 1]) shards.push(await spawnServer(t, { ...env, ROLES: 'compactor,flows', SHARD: `${index}/2`, DATA_DIR: join(root, `shard-${index}`) }));
  const front = await spawnServer(t, { ...env, ROLES: frontRoles, DATA_DIR: join(root, 'front') });
  return { shards, front };
}
