/**
 * `npm ci --omit=dev && npm start` on a copy of the project with a dist/ built beforehand (what the
 * Dockerfile's final stage and a systemd install do): the install must not need TypeScript, and the
 * service must start and take an event without any dev dependency.
 */
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, createOrgOverHttp, freePort, waitForCompaction } from '../helpers/server-process.js';
import { ROOT } from '../helpers/paths.js';

t.test('a production install runs the prebuilt dist/ without dev dependencies', async (t) => {
  t.ok(existsSync(join(ROOT, 'dist/src/server.js')), 'dist/ is built (npm ci in the checkout runs the build)');
  const dir = mkdtempSync(join(tmpdir(), 'audience-prod-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const path of ['package.json', 'package-lock.json', 'src/tools/prepare.mjs', 'schemas', 'pipelines', 'docs/errors.md', 'dist']) {
    cpSync(join(ROOT, path), join(dir, path), { recursive: true });
  }

  const install = spawnSync('npm', ['ci', '--omit=dev', '--prefer-offline', '--no-audit', '--no-fund'], { cwd: dir, encoding: 'utf8' });
  t.equal(install.status, 0, `npm ci --omit=dev succeeds:\n${install.stderr}`);
  t.match(install.stdout, /TypeScript is not installed/, 'prepare skips the build');
  t.notOk(existsSync(join(dir, 'node_modules/typescript')), 'no dev dependency installed');

  const port = await freePort();
  const child = spawn('npm', ['start'], {
    cwd: dir,
    detached: true,
    env: { ...process.env, NATS_URL: '', PORT: String(port), HOST: '127.0.0.1', DATA_DIR: join(dir, 'data'), ADMIN_KEY, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  t.teardown(async () => {
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
    await exited;
  });

  const url = `http://127.0.0.1:${port}`;
  let ready = false;
  for (let i = 0; i < 300 && !ready && child.exitCode === null; i++) {
    ready = await fetch(`${url}/readyz`).then((res) => res.ok, () => false);
    if (!ready) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  t.ok(ready, `npm start serves /readyz:\n${output}`);

  const cred = await createOrgOverHttp(url, 'prod');
  await waitForCompaction(url, 'prod', cred);
  t.pass('an event is acknowledged and compacted into DuckDB');
  const console = await fetch(`${url}/console/`);
  t.equal(console.status, 200, 'the console is served from the prebuilt dist/console');
  const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(await console.text())?.[1];
  t.equal((await fetch(`${url}${script}`)).status, 200, 'with its script');
});
