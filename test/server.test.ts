/**
 * Start-up failures an operator causes are one line on stderr and exit 1, never a stack trace
 * (DATA_DIR in use: test/data-dir-lock.test.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import t from 'tap';
import { ADMIN_KEY } from './helpers/app.js';
import { freePort } from './helpers/free-port.js';
import { LOCK_FILE } from '../src/data-dir-lock.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));

function start(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/server.ts'],
      { cwd: ROOT, timeout: 30_000, env: { ...process.env, NATS_URL: '', HOST: '127.0.0.1', LOG_LEVEL: 'warn', ADMIN_KEY, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

t.test('NATS_URL where no NATS answers', async (t) => {
  const dataDir = t.testdir();
  const natsPort = await freePort();
  const run = await start({ DATA_DIR: dataDir, PORT: String(await freePort()), NATS_URL: `nats://127.0.0.1:${natsPort}` });
  t.equal(run.code, 1);
  t.equal(run.stderr, `audience: cannot connect to NATS at nats://127.0.0.1:${natsPort} (NATS_URL); start NATS or unset NATS_URL for the embedded log\n`);
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'the lock is released');
});

t.test('a malformed REDIS_URL stops start-up naming it', async (t) => {
  const dataDir = t.testdir();
  const run = await start({ DATA_DIR: dataDir, PORT: String(await freePort()), REDIS_URL: 'localhost:6379' });
  t.equal(run.code, 1);
  t.match(run.stderr, /^audience: REDIS_URL is invalid: [^\n]+\n$/);
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'nothing was opened');
});

t.test('PORT already taken by another program', async (t) => {
  const dataDir = t.testdir();
  const taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const port = (taken.address() as { port: number }).port;
  const run = await start({ DATA_DIR: dataDir, PORT: String(port) });
  t.equal(run.code, 1);
  t.equal(run.stderr, `audience: cannot listen on 127.0.0.1:${port} (EADDRINUSE); set PORT or HOST\n`);
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'the service closed what it opened, the lock included');
});
