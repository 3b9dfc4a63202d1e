/**
 * Start-up failures an operator causes are one line on stderr and exit 1, never a stack trace
 * (DATA_DIR in use: test/core/data-dir-lock.test.ts).
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY } from './helpers/app.js';
import { freePort } from './helpers/free-port.js';
import { LOCK_FILE } from '../src/core/data-dir-lock.js';
import { JetStreamLog } from '../src/events/log/jetstream-log.js';
import { HIGH_WATER_FILE } from '../src/storage/checkpoint.js';
import { hasNatsServerBinary, startNatsServer } from './helpers/nats-server.js';
import { entryArgs } from './helpers/entry.js';
import { ROOT } from './helpers/paths.js';

function start(env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      entryArgs('server'),
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

t.test('a thread pool smaller than the service needs stops start-up, checked, not assumed', async (t) => {
  const dataDir = t.testdir();
  const run = await start({ DATA_DIR: dataDir, PORT: String(await freePort()), UV_THREADPOOL_SIZE: '2' });
  t.equal(run.code, 1);
  t.equal(run.stderr, "audience: libuv's thread pool has fewer than 4 threads: UV_THREADPOOL_SIZE is set lower; unset it or set at least 4\n");
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'nothing was opened');
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

const withNats = hasNatsServerBinary() ? t.test : t.skip;

withNats('a recreated JetStream stream that holds records below the org positions', async (t) => {
  const dataDir = t.testdir({ orgs: { [HIGH_WATER_FILE]: '00000000000000000040\n' } });
  const nats = await startNatsServer(t);
  // A collector wrote to the recreated stream before this storage process started.
  const collector = await JetStreamLog.open({ servers: nats.url });
  for (const id of ['a', 'b', 'c']) await collector.write(id, Buffer.from(id), 'acme');
  await collector.close();
  const run = await start({ DATA_DIR: dataDir, PORT: String(await freePort()), NATS_URL: nats.url });
  t.equal(run.code, 1);
  t.match(run.stderr, /^audience: JetStream stream AUDIENCE_EVENTS ends at sequence 3 \(3 records\), below position 40 [^\n]+ --seq 41[^\n]+\n$/);
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'the lock is released');
});
