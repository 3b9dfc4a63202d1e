/**
 * A private 3-node JetStream cluster per test (n1, n2, n3 on loopback, free ports), for tests that
 * kill or restart one node. Shaped like deploy/nats/ (one cluster block with every route, a store per
 * node) but with ports found free at the time and a store under the test's fixture dir.
 * Every node is killed on test end, whatever the test did.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Test } from 'tap';
import { restartablePort } from './free-port.js';
import { scaled, sleep } from './deadline.js';
import { natsProcess, serverVersionAtLeast } from './nats-process.js';
import { SYNC_INTERVAL_SINCE } from './nats-server.js';

export { hasNatsServerBinary } from './nats-process.js';

/** A node elects or rejoins within ~2–4 s on 2.9 (raft election timeouts); 30 s leaves room on a busy machine. */
const READY_TIMEOUT_MS = 30_000;
const NODE_NAMES = ['n1', 'n2', 'n3'] as const;
export type NodeName = (typeof NODE_NAMES)[number];

export interface NatsClusterNode {
  name: NodeName;
  url: string;
  port: number;
  clusterPort: number;
  /** HTTP monitoring port (`/healthz`, `/jsz`). */
  monitorPort: number;
  /** Graceful stop (SIGTERM), resolves once the process has exited. */
  stop(): Promise<void>;
  /** SIGKILL, like a crash; `restart()` waits for the process to be gone. */
  kill9(): void;
  /** Starts it again on the same ports with the same store; resolves once its client port accepts. */
  restart(): Promise<void>;
  /**
   * `/healthz` says ok: the node sees a meta leader and every stream and consumer it holds has caught
   * up. False while the node is down.
   */
  healthy(): Promise<boolean>;
}

export interface NatsClusterHandle {
  /** Every node's client URL, comma-separated, as NATS_URL takes it. */
  urls: string;
  nodes: readonly [NatsClusterNode, NatsClusterNode, NatsClusterNode];
  node(name: NodeName): NatsClusterNode;
  /** True when every node fsyncs before every ack (`sync_interval: always`): asked for and supported. */
  syncAlways: boolean;
  /** The JetStream meta leader as a running node sees it (`/jsz`), or undefined while there is none. */
  metaLeader(): Promise<NodeName | undefined>;
  /**
   * Resolves once the JetStream API answers through the cluster (there is a meta leader) and every
   * running node is healthy; throws after `timeoutMs`.
   */
  ready(timeoutMs?: number): Promise<void>;
  /** Graceful stop of every node. */
  stop(): Promise<void>;
}

export async function startNatsCluster(t: Test, opts: { syncAlways?: boolean } = {}): Promise<NatsClusterHandle> {
  // Registered before t.testdir(): tap runs teardowns in the order they were registered, so the nodes are
  // gone before their stores are removed (a removal under live servers fails with ENOTEMPTY).
  const started: Array<ReturnType<typeof natsProcess>> = [];
  t.teardown(async () => {
    for (const proc of started) proc.signal('SIGKILL');
    await Promise.all(started.map((proc) => proc.exited()));
  });
  // Reuse the test's fixture dir if it already made one: a second t.testdir() would wipe it.
  const root = existsSync(t.testdirName) ? t.testdirName : t.testdir();
  const syncAlways = opts.syncAlways === true && serverVersionAtLeast(SYNC_INTERVAL_SINCE);
  const ports = await distinctFreePorts(NODE_NAMES.length * 3);
  const specs = NODE_NAMES.map((name, i) => ({
    name,
    port: ports[i * 3]!,
    clusterPort: ports[i * 3 + 1]!,
    monitorPort: ports[i * 3 + 2]!,
  }));
  const dir = join(root, `nats-cluster-${specs[0]!.port}`);
  const routes = specs.map((s) => `    nats-route://127.0.0.1:${s.clusterPort}`);

  const nodes = await Promise.all(
    specs.map(async (spec): Promise<NatsClusterNode> => {
      const nodeDir = join(dir, spec.name);
      await mkdir(nodeDir, { recursive: true });
      const config = join(nodeDir, 'nats.conf');
      await writeFile(
        config,
        [
          `server_name: ${spec.name}`,
          `listen: "127.0.0.1:${spec.port}"`,
          `http: "127.0.0.1:${spec.monitorPort}"`,
          'jetstream {',
          `  store_dir: ${JSON.stringify(join(nodeDir, 'store'))}`,
          ...(syncAlways ? ['  sync_interval: always'] : []),
          '}',
          'cluster {',
          '  name: test',
          `  listen: "127.0.0.1:${spec.clusterPort}"`,
          '  routes: [',
          ...routes,
          '  ]',
          '}',
          '',
        ].join('\n'),
      );
      const proc = natsProcess(config, spec.port);
      started.push(proc);
      return {
        ...spec,
        url: `nats://127.0.0.1:${spec.port}`,
        async stop() {
          proc.signal('SIGTERM');
          await proc.exited();
        },
        kill9() {
          proc.signal('SIGKILL');
        },
        restart: proc.start,
        async healthy() {
          return (await monitor(spec.monitorPort, '/healthz'))?.status === 'ok';
        },
      };
    }),
  );
  const [n1, n2, n3] = nodes as [NatsClusterNode, NatsClusterNode, NatsClusterNode];
  const urls = nodes.map((n) => n.url).join(',');

  const handle: NatsClusterHandle = {
    urls,
    nodes: [n1, n2, n3],
    node: (name) => nodes.find((n) => n.name === name)!,
    syncAlways,
    async metaLeader() {
      for (const node of nodes) {
        const jsz = await monitor(node.monitorPort, '/jsz');
        const leader = jsz?.meta_cluster?.leader;
        if (typeof leader === 'string' && leader !== '') return leader as NodeName;
      }
      return undefined;
    },
    async ready(timeoutMs = READY_TIMEOUT_MS) {
      timeoutMs = scaled(timeoutMs);
      const deadline = Date.now() + timeoutMs;
      await waitForJetStreamApi(urls, deadline);
      for (;;) {
        const health = await Promise.all(nodes.map(async (n) => (await n.healthy()) || !(await isUp(n))));
        if (health.every(Boolean)) return;
        if (Date.now() > deadline) throw new Error(`cluster not healthy after ${timeoutMs} ms: ${health.join(',')}`);
        await sleep(100);
      }
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
  // One at a time: a node that starts alone logs route errors until the others listen, harmlessly.
  for (const node of nodes) await node.restart();
  await handle.ready();
  return handle;
}

/** The JetStream API answers (`$JS.API.INFO` through jsm.getAccountInfo), which needs a meta leader. */
async function waitForJetStreamApi(urls: string, deadline: number): Promise<void> {
  let lastError: unknown;
  while (Date.now() < deadline) {
    const nc = await connect({ servers: urls.split(','), timeout: scaled(1_000) }).catch((err: unknown) => {
      lastError = err;
      return undefined;
    });
    if (nc !== undefined) {
      try {
        const jsm = await jetstreamManager(nc, { timeout: scaled(1_000), checkAPI: false });
        await jsm.getAccountInfo();
        return;
      } catch (err) {
        lastError = err;
      } finally {
        await nc.close();
      }
    }
    await sleep(200);
  }
  throw new Error('no JetStream meta leader in the cluster', { cause: lastError });
}

async function isUp(node: NatsClusterNode): Promise<boolean> {
  return (await monitor(node.monitorPort, '/varz')) !== undefined;
}

interface MonitorBody {
  status?: string;
  meta_cluster?: { leader?: string };
}

/** GET on a node's monitoring port; undefined when the node does not answer within 1 s. */
async function monitor(port: number, path: string): Promise<MonitorBody | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, { signal: AbortSignal.timeout(scaled(1_000)) });
    return (await res.json()) as MonitorBody;
  } catch {
    return undefined;
  }
}

/** restartablePort() closes its probe before returning, so two calls can hand out the same port. */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await restartablePort());
  return [...ports];
}

