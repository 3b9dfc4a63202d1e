/**
 * The processes of bench/scale.ts, started as `npm run cluster` starts them (src/tools/cluster.ts) but
 * on one private nats-server: `node dist/src/server.js` configured by environment, each optionally
 * pinned to CPUs with taskset; and the org the load uses (contacts imported, a token).
 */
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Credentials } from './bodies.js';
import { type Contact, contactsCsv, emailHash } from './contacts.js';
import { ADMIN_KEY, admin, type Bench, metric, ORG, type Service } from './harness.js';
import { Child, freePort, waitHttpOk } from './procs.js';
import { SERVICE_NODE_FLAGS } from '../src/core/node-flags.js';

/** A process of the layout. */
export interface Proc extends Service {
  name: string;
  /** taskset CPU list, or undefined (not pinned). */
  cpus: string | undefined;
}

/** A service process: ROLES and SHARD as given, NATS mode on `natsUrl`, DATA_DIR <work dir>/<dir>. */
export async function startNode(
  bench: Bench,
  name: string,
  natsUrl: string,
  env: { ROLES: string; SHARD?: string },
  cpus: string | undefined,
  dir = name,
): Promise<Proc> {
  const port = await freePort();
  const dataDir = join(bench.workDir, dir);
  mkdirSync(dataDir, { recursive: true });
  const child = Child.start(name, join(bench.root, 'dist/src/server.js'), {
    nodeArgs: [...SERVICE_NODE_FLAGS],
    cwd: bench.root,
    logFile: join(bench.workDir, `${name}.log`),
    ...(cpus ? { cpus } : {}),
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATA_DIR: dataDir,
      ADMIN_KEY,
      LOG_LEVEL: 'warn',
      // Never the machine's shared server, whatever the environment says.
      NATS_URL: natsUrl,
      NATS_STREAM_REPLICAS: '1',
      QUERIES_DIR: join(bench.workDir, 'queries'),
      SHARD: '',
      ...env,
    },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    // A cold start on a loaded 2-core machine can take a while (test/helpers: 30 s seen).
    await waitHttpOk(`${url}/readyz`, child, 60_000);
  } catch (error) {
    child.kill();
    throw error;
  }
  return { name, child, url, dataDir, cpus };
}

/** A bare Fastify server (bench/bare-server.ts), pinned like the service processes. */
export async function startBare(bench: Bench, name: string, cpus: string | undefined): Promise<Proc> {
  const port = await freePort();
  const child = Child.start(name, join(bench.root, 'dist/bench/bare-server.js'), {
    cwd: bench.root,
    logFile: join(bench.workDir, `${name}.log`),
    ...(cpus ? { cpus } : {}),
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1' },
  });
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitHttpOk(`${url}/healthz`, child);
  } catch (error) {
    child.kill();
    throw error;
  }
  return { name, child, url, dataDir: '', cpus };
}

/** SPEC 3: rateLimit is at most 100,000/s; raised so that the limiter never answers 429 here. */
const RATE_LIMIT = 100_000;
const IMPORT_CHUNK = 20_000;

/**
 * The org (Audience API on), a token, and `contacts` imported, through a process that has the `api`
 * role and keeps the org (an `api`-only process cannot take an import: it has no database).
 */
export async function setUpOrg(api: Service, contacts: Contact[]): Promise<{ credentials: Credentials; token: string }> {
  const org = await admin<{ credentials: { production: Credentials } }>(api, 'POST', '/admin/v1/orgs', {
    slug: ORG,
    name: 'Bench',
    audienceApi: true,
    rateLimit: RATE_LIMIT,
  });
  if (org.status !== 201) throw new Error(`create org: ${org.status} ${JSON.stringify(org.json)}`);
  const token = await admin<{ token: string }>(api, 'POST', `/admin/v1/orgs/${ORG}/tokens`, { createdBy: 'bench@example.com' });
  if (token.status !== 201) throw new Error(`create token: ${token.status} ${JSON.stringify(token.json)}`);
  for (let from = 0; from < contacts.length; from += IMPORT_CHUNK) {
    const csv = contactsCsv(contacts, from, Math.min(contacts.length, from + IMPORT_CHUNK));
    const res = await admin<{ imported: number; rejected: unknown[] }>(api, 'POST', `/admin/v1/orgs/${ORG}/contacts/import`, csv, 'text/csv');
    if (res.status !== 200 || res.json.rejected.length > 0) throw new Error(`import: ${res.status} ${JSON.stringify(res.json).slice(0, 500)}`);
  }
  return { credentials: org.json.credentials.production, token: token.json.token };
}

/** Every identity type finds the contact on this `api` process (from the profile feed: within 30 s). */
export async function checkLookups(api: Service, token: string, contact: Contact): Promise<void> {
  for (const identity of [`email:${contact.email}`, `email-hash:${emailHash(contact.email)}`, `user_id:${contact.userId}`]) {
    let last = { status: 0, text: '' };
    const found = async () => {
      last = await lookup(api, token, identity);
      return last.status === 200 && last.text.includes(contact.email);
    };
    await waitFor(found, 30_000, `lookup by ${identity.split(':')[0]} on ${api.url}`).catch((error: Error) => {
      throw new Error(`${error.message}: last answer ${last.status} ${last.text.slice(0, 300)}`);
    });
  }
}

async function lookup(api: Service, token: string, identity: string): Promise<{ status: number; text: string }> {
  const res = await fetch(`${api.url}/audience/v2/contacts?identity=${encodeURIComponent(identity)}`, {
    headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
  });
  return { status: res.status, text: await res.text() };
}

/** The shard has compacted everything in the stream (its lag gauge is 0 twice, 200 ms apart). */
export async function waitCompacted(shard: Service, timeoutMs = 300_000): Promise<void> {
  let zeros = 0;
  await waitFor(async () => {
    zeros = (await metric(shard, 'audience_compaction_lag_records')) === 0 ? zeros + 1 : 0;
    return zeros >= 2;
  }, timeoutMs, 'compaction to catch up');
}

async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
