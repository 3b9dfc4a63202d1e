/**
 * deploy/nats/: the three node files are valid for this machine's nats-server (`-t` parses a config,
 * includes and variables resolved, and exits), refuse to start without a store directory, and agree
 * with each other on ports and routes. Starting them for real would take ports a developer's local
 * cluster may hold; test/helpers/nats-cluster.ts runs the same shape on free ports.
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { NATS_SERVER, hasNatsServerBinary } from '../helpers/nats-process.js';
import { ROOT } from '../helpers/paths.js';

const DIR = join(ROOT, 'deploy/nats/');
const NODES = ['n1', 'n2', 'n3'];

const check = (node: string, env: Record<string, string>) =>
  spawnSync(NATS_SERVER, ['-t', '-c', join(DIR, `${node}.conf`)], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', ...env } });

const binary = hasNatsServerBinary() ? t.test : t.skip;

binary('each node file is valid with NATS_STORE_DIR set, and refused without it', async (t) => {
  const store = t.testdir();
  for (const node of NODES) {
    const ok = check(node, { NATS_STORE_DIR: join(store, node) });
    t.equal(ok.status, 0, `${node}: ${ok.stderr.trim()}`);
    const missing = check(node, {});
    t.not(missing.status, 0, `${node} without NATS_STORE_DIR does not start`);
    t.match(missing.stderr, /NATS_STORE_DIR/, 'and says which variable is missing');
  }
});

t.test('ports are distinct and the shared route list names every node', async (t) => {
  const routes = [...readFileSync(join(DIR, 'routes.conf'), 'utf8').matchAll(/nats-route:\/\/127\.0\.0\.1:(\d+)/g)].map((m) => m[1]);
  const ports = NODES.map((node) => {
    const text = readFileSync(join(DIR, `${node}.conf`), 'utf8');
    t.match(text, new RegExp(`^server_name: ${node}$`, 'm'), `${node} names itself`);
    const [client, monitor, cluster] = [/^listen: 127\.0\.0\.1:(\d+)$/m, /^http: 127\.0\.0\.1:(\d+)$/m, /^\s+listen: 127\.0\.0\.1:(\d+)$/m].map(
      (re) => re.exec(text)?.[1],
    );
    t.ok(client && monitor && cluster, `${node} has client, monitoring and cluster ports`);
    t.not(client, '4222', `${node} keeps off the shared server's port`);
    return { client, monitor, cluster };
  });
  t.same(routes, ports.map((p) => p.cluster), 'routes.conf lists every cluster port');
  const all = ports.flatMap((p) => [p.client, p.monitor, p.cluster]);
  t.equal(new Set(all).size, all.length, 'no port is used twice');
});
