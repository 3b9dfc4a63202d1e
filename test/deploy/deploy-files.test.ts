/**
 * The deployment files (Dockerfile, compose.yaml, deploy/compose/, deploy/systemd/) against the code:
 * every variable they set is one the service reads, and each service's environment passes the
 * service's own config validation. No Docker engine runs here, so the images are not built: these
 * checks catch the drift (a renamed variable, a shard missing, a stage installing dev dependencies).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { parse } from 'yaml';
import { CONFIG_VARIABLES, readConfig } from '../../src/core/config.js';
import { SERVICE_NODE_FLAGS } from '../../src/core/node-flags.js';
import { NATS_SERVER, hasNatsServerBinary } from '../helpers/nats-process.js';
import { ROOT } from '../helpers/paths.js';

/** What every start of the service runs after node: its V8 flags, then the entry (node-flags.ts). */
const SERVICE_ARGS = [...SERVICE_NODE_FLAGS, 'dist/src/server.js'];

const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

interface ComposeService {
  image?: string;
  build?: unknown;
  environment?: Record<string, string>;
  volumes?: string[];
}
const compose = parse(read('compose.yaml'), { merge: true }) as { services: Record<string, ComposeService> };
const services = Object.entries(compose.services);
const audience = services.filter(([, s]) => s.build !== undefined);
const nats = services.filter(([, s]) => s.image?.startsWith('nats:'));

/** compose's ${VAR:?message} and ${VAR} forms, as the operator's shell would fill them in. */
const interpolate = (value: string) => value.replace(/\$\{(\w+)(?::\?[^}]*)?\}/g, (_, name: string) => (name === 'ADMIN_KEY' || name === 'WEBHOOK_SIGNING_KEY' ? 'k'.repeat(32) : ''));

t.test('compose: every Audience service sets only variables the service reads, and they pass its validation', async (t) => {
  t.ok(audience.length >= 4, 'collectors, api and storage shards');
  for (const [name, service] of audience) {
    const env = Object.fromEntries(Object.entries(service.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]));
    for (const key of Object.keys(env)) t.ok(CONFIG_VARIABLES.includes(key), `${name}: ${key} is a configuration variable`);
    t.doesNotThrow(() => readConfig(env), `${name}: its environment is a valid configuration`);
  }
});

t.test('compose: every role is present and the storage shards cover every org', async (t) => {
  const configs = audience.map(([, s]) => readConfig(Object.fromEntries(Object.entries(s.environment ?? {}).map(([k, v]) => [k, interpolate(String(v))]))));
  for (const role of ['collector', 'api', 'compactor', 'flows']) t.ok(configs.some((c) => c.roles.includes(role as never)), `a process has the ${role} role`);
  const shards = configs.filter((c) => c.roles.includes('compactor')).map((c) => c.shard);
  const count = shards[0]!.count;
  t.same(shards.map((s) => s.index).sort(), [...Array(count).keys()], `shards 0..${count - 1}, each once`);
  t.ok(shards.every((s) => s.count === count), 'every shard agrees on the count');
  for (const [name, service] of audience.filter(([, s]) => s.environment?.SHARD)) {
    t.ok(service.volumes?.some((v) => v.endsWith(':/data')), `${name} keeps its databases on its own volume`);
  }
  t.ok(configs.every((c) => c.natsStreamReplicas === 3), 'the stream is replicated on the three nodes');
  // The api process opens a link's token with it to find the shard; a key of its own would open none.
  t.ok(configs.every((c) => c.webhookSigningKey !== undefined && c.webhookSigningKey === configs[0]!.webhookSigningKey), 'one WEBHOOK_SIGNING_KEY for every process');
});

t.test('compose: a 3-node NATS cluster that fsyncs before it acknowledges', async (t) => {
  t.equal(nats.length, 3, 'three NATS nodes');
  const conf = read('deploy/compose/nats.conf');
  t.match(conf, /^\s*sync_interval:\s*always\s*$/m, 'sync_interval: always');
  const routes = [...conf.matchAll(/nats-route:\/\/([\w-]+):6222/g)].map((m) => m[1]);
  t.same(routes.sort(), nats.map(([name]) => name).sort(), 'the routes name every node of compose.yaml');
  for (const [name, service] of nats) t.ok(service.volumes?.some((v) => v.endsWith(':/data')), `${name} keeps its store on a volume`);
  const urls = String(audience[0]![1].environment?.NATS_URL).split(',');
  t.same(urls.map((u) => new URL(u).hostname).sort(), routes.sort(), 'the service connects to every node');
});

(hasNatsServerBinary() ? t.test : t.skip)('compose: the NATS config parses (nats-server -t, without the 2.10 option 2.9 lacks)', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'nats.conf');
  writeFileSync(file, read('deploy/compose/nats.conf').replace(/^\s*sync_interval:.*$/m, ''));
  const check = spawnSync(NATS_SERVER, ['-t', '-c', file], { encoding: 'utf8', env: { PATH: '/usr/bin:/bin', NATS_SERVER_NAME: 'nats-1' } });
  t.equal(check.status, 0, check.stderr);
});

t.test('Dockerfile: a build stage, then production dependencies only, as a non-root user', async (t) => {
  const text = read('Dockerfile');
  const stages = text.split(/^FROM /m).slice(1);
  t.equal(stages.length, 2, 'two stages');
  const [build, final] = stages as [string, string];
  t.match(build, /^\s*RUN npm run build$/m, 'the build stage compiles dist/');
  t.match(final, /^RUN npm ci --omit=dev\b/m, 'the final stage installs without dev dependencies');
  t.match(final, /^COPY --from=build \/app\/dist dist$/m, 'and takes dist/ from the build stage');
  t.match(final, /^USER node$/m, 'runs as the unprivileged node user');
  const cmd = JSON.stringify(['node', ...SERVICE_ARGS]).replaceAll(',', ', ');
  t.ok(final.split('\n').includes(`CMD ${cmd}`), 'runs node directly (so SIGTERM reaches the service) with the service\'s V8 flags');
  const envKeys = [...final.matchAll(/^ENV (.*)$/gm)].flatMap((line) => [...line[1]!.matchAll(/(\w+)=/g)].map((m) => m[1]!));
  t.ok(envKeys.includes('DATA_DIR'), 'the image sets DATA_DIR');
  for (const key of envKeys.filter((k) => k !== 'NODE_ENV')) t.ok(CONFIG_VARIABLES.includes(key), `ENV ${key} is a configuration variable`);
});

t.test('systemd: the environment example is a valid configuration', async (t) => {
  const env = Object.fromEntries(
    read('deploy/systemd/audience.env.example')
      .split('\n')
      .filter((line) => /^\w+=/.test(line))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  for (const key of Object.keys(env)) t.ok(CONFIG_VARIABLES.includes(key), `${key} is a configuration variable`);
  t.doesNotThrow(() => readConfig(env));
  const unit = read('deploy/systemd/audience.service');
  t.ok(unit.split('\n').includes(`ExecStart=/usr/bin/node ${SERVICE_ARGS.join(' ')}`), 'node directly, with the service\'s V8 flags');
  t.match(unit, new RegExp(`^ReadWritePaths=${env.DATA_DIR}$`, 'm'), 'the unit may write DATA_DIR, and only it');
});

t.test('npm start runs the service with its V8 flags, as the image and the unit do', async (t) => {
  const { scripts } = JSON.parse(read('package.json')) as { scripts: Record<string, string> };
  t.equal(scripts.start, ['node', ...SERVICE_ARGS].join(' '));
});
