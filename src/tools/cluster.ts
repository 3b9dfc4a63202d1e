/**
 * `npm run cluster`: the many-process layout on this machine, for trying it out and for tests of it. A
 * 3-node nats-server cluster (deploy/nats/, JetStream R3), 2 collectors, 2 `api` processes and 2
 * storage shards, each an ordinary `npm start` process configured by environment; their addresses are
 * printed, their logs go to <dir>/logs/, and Ctrl-C stops them all. Data lives in CLUSTER_DIR
 * (default ./cluster-data): the nodes' stores, each shard's DATA_DIR, the admin key.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { resolveWebhookSigningKey } from '../reactions/channels/webhook-signing.js';
import { createContext } from '../core/context.js';
import { resolveAdminKey } from '../control/admin-key.js';
import { projectRoot } from '../core/paths.js';
import { SERVICE_NODE_FLAGS } from '../core/node-flags.js';

const NODES = [
  { name: 'n1', port: 14222 },
  { name: 'n2', port: 14223 },
  { name: 'n3', port: 14224 },
];
const NATS_SERVER_CANDIDATES = ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server'];
/** A 3-node cluster elects its JetStream meta leader within seconds; this bounds a broken start. */
const NATS_READY_MS = 30_000;
const SERVICE_READY_MS = 60_000;

interface Member {
  name: string;
  roles: string;
  port: number;
  env: Record<string, string>;
}

const dir = resolve(process.env.CLUSTER_DIR || 'cluster-data');
const basePort = Number(process.env.CLUSTER_BASE_PORT || 8081);
const children: Array<{ name: string; child: ChildProcess }> = [];

async function main(): Promise<void> {
  const natsServer = NATS_SERVER_CANDIDATES.find((path) => existsSync(path)) ?? which('nats-server');
  if (!natsServer) fail('nats-server is not installed (Debian: apt-get install nats-server)');
  mkdirSync(join(dir, 'logs'), { recursive: true });
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));

  for (const node of NODES) {
    start(node.name, natsServer, ['-c', join(projectRoot, 'deploy', 'nats', `${node.name}.conf`)], { NATS_STORE_DIR: join(dir, 'nats', node.name) });
  }
  const natsUrl = NODES.map((n) => `nats://127.0.0.1:${n.port}`).join(',');
  await natsReady(natsUrl);

  const ctx = createContext();
  resolveAdminKey(undefined, dir, ctx);
  const adminKeyFile = join(dir, 'admin.key');
  const shared = {
    NATS_URL: natsUrl,
    NATS_STREAM_REPLICAS: '3',
    ADMIN_KEY: readFileSync(adminKeyFile, 'utf8').trim(),
    WEBHOOK_SIGNING_KEY: resolveWebhookSigningKey(undefined, dir, ctx.randomBytes),
    QUERIES_DIR: resolve(process.env.QUERIES_DIR || 'queries'),
    ...(process.env.REDIS_URL ? { REDIS_URL: process.env.REDIS_URL } : {}),
  };
  const members: Member[] = [
    { name: 'collector-1', roles: 'collector', port: basePort, env: {} },
    { name: 'collector-2', roles: 'collector', port: basePort + 1, env: {} },
    { name: 'api-1', roles: 'api', port: basePort + 2, env: {} },
    { name: 'api-2', roles: 'api', port: basePort + 3, env: {} },
    { name: 'shard-0', roles: 'compactor,flows', port: basePort + 4, env: { SHARD: '0/2', DATA_DIR: join(dir, 'shard-0') } },
    { name: 'shard-1', roles: 'compactor,flows', port: basePort + 5, env: { SHARD: '1/2', DATA_DIR: join(dir, 'shard-1') } },
  ];
  // Shards first: collectors' events wait in the stream either way, but shards publish the profiles the api processes load.
  for (const member of [...members.slice(4), ...members.slice(0, 4)]) {
    start(member.name, process.execPath, [...SERVICE_NODE_FLAGS, join(projectRoot, 'dist', 'src', 'server.js')], {
      ...shared,
      ...member.env,
      ROLES: member.roles,
      PORT: String(member.port),
      HOST: '127.0.0.1',
      DATA_DIR: member.env.DATA_DIR ?? join(dir, member.name),
    });
  }
  await Promise.all(members.map((m) => serviceReady(m)));

  const rows = [
    ...NODES.map((n) => [n.name, 'nats-server (JetStream R3)', `nats://127.0.0.1:${n.port}`]),
    ...members.map((m) => [m.name, m.roles + (m.env.SHARD ? ` SHARD=${m.env.SHARD}` : ''), `http://127.0.0.1:${m.port}`]),
  ];
  console.log(`audience cluster is ready (data and logs in ${dir})\n`);
  for (const [name, what, url] of rows) console.log(`  ${name!.padEnd(12)} ${what!.padEnd(34)} ${url}`);
  console.log(`\n  admin key: ${adminKeyFile}\n  collect at http://127.0.0.1:${basePort}/http/v1/collect, admin and Audience API at http://127.0.0.1:${basePort + 2}\n\nCtrl-C stops them all.`);
}

function start(name: string, command: string, args: string[], env: Record<string, string>): void {
  const log = createWriteStream(join(dir, 'logs', `${name}.log`), { flags: 'a' });
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  child.once('exit', (code, signal) => {
    if (!stopping) {
      console.error(`${name} exited (${signal ?? code}); see ${join(dir, 'logs', `${name}.log`)}. Stopping the cluster.`);
      void stopAll(1);
    }
  });
  children.push({ name, child });
}

async function natsReady(servers: string): Promise<void> {
  const deadline = Date.now() + NATS_READY_MS;
  for (;;) {
    try {
      const nc = await connect({ servers: servers.split(','), timeout: 1000 });
      try {
        await (await jetstreamManager(nc)).getAccountInfo();
        return;
      } finally {
        await nc.close();
      }
    } catch (error) {
      if (Date.now() > deadline) fail(`the NATS cluster has no JetStream leader after ${NATS_READY_MS / 1000} s: ${(error as Error).message} (logs in ${join(dir, 'logs')})`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

async function serviceReady(member: Member): Promise<void> {
  const deadline = Date.now() + SERVICE_READY_MS;
  for (;;) {
    const ok = await fetch(`http://127.0.0.1:${member.port}/readyz`).then((r) => r.ok, () => false);
    if (ok) return;
    if (Date.now() > deadline) fail(`${member.name} is not ready after ${SERVICE_READY_MS / 1000} s (see ${join(dir, 'logs', `${member.name}.log`)})`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

let stopping = false;
/** Services first (they finish their batches), then the NATS nodes. */
async function stopAll(code: number): Promise<never> {
  if (!stopping) {
    stopping = true;
    const services = children.filter((c) => !NODES.some((n) => n.name === c.name));
    const nodes = children.filter((c) => NODES.some((n) => n.name === c.name));
    await Promise.all(services.map(({ child }) => stop(child)));
    await Promise.all(nodes.map(({ child }) => stop(child)));
  }
  process.exit(code);
}

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const force = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(force);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

function which(command: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${command}`], { encoding: 'utf8' }).stdout.trim();
  return found || undefined;
}

function fail(message: string): never {
  console.error(`audience cluster: ${message}`);
  void stopAll(1);
  throw new Error(message);
}

await main().catch((error: unknown) => {
  if (!stopping) {
    console.error(`audience cluster: ${(error as Error).message}`);
    void stopAll(1);
  }
});
