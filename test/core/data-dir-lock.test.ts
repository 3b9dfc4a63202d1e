/**
 * One process per DATA_DIR: real server processes on one directory, and apps built in this process.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import t from 'tap';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';
import { createOrgOverHttp, freePort, spawnServer } from '../helpers/server-process.js';
import { DataDirInUseError, LOCK_FILE } from '../../src/core/data-dir-lock.js';
import { entryArgs } from '../helpers/entry.js';
import { scaled } from '../helpers/deadline.js';
import { ROOT } from '../helpers/paths.js';

/** The real server started on `dataDir`, expected to refuse: its exit code and output. */
async function startRefused(dataDir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  const port = await freePort();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      entryArgs('server'),
      {
        cwd: ROOT,
        timeout: 30_000,
        env: { ...process.env, NATS_URL: '', PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ADMIN_KEY, DATA_DIR: dataDir },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code) : 0, stdout, stderr }),
    );
  });
}

async function collect(url: string, body: unknown): Promise<number> {
  const res = await fetch(`${url}/http/v1/collect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  await res.arrayBuffer();
  return res.status;
}

t.test('a second server on a DATA_DIR in use says so in one line; after a kill -9 a new one starts', async (t) => {
  const dataDir = t.testdir();
  const first = await spawnServer(t, { DATA_DIR: dataDir });
  const cred = await createOrgOverHttp(first.url, 'acme');
  t.equal(readFileSync(join(dataDir, LOCK_FILE), 'utf8'), `${first.pid}\n`, 'the lock file holds the owner pid');

  const second = await startRefused(dataDir);
  t.equal(second.code, 1, 'the second process exits 1');
  t.equal(
    second.stderr,
    `audience: DATA_DIR ${dataDir} is in use by another audience process (pid ${first.pid}); stop it or use another DATA_DIR\n`,
    'one line naming the directory and the owner',
  );
  t.equal(second.stdout, '', 'nothing logged: it opened nothing');
  t.notMatch(second.stderr, /\n\s+at |duckdb/i, 'no stack trace, no DuckDB message');

  t.equal(await collect(first.url, customEvent(cred, { messageId: 'after-refusal' })), 200, 'the first still takes events');
  t.equal(readFileSync(join(dataDir, LOCK_FILE), 'utf8'), `${first.pid}\n`, 'and still holds the lock');

  await first.kill9();
  t.ok(existsSync(join(dataDir, LOCK_FILE)), 'a kill -9 leaves the lock file behind');
  const third = await spawnServer(t, { DATA_DIR: dataDir });
  t.equal(readFileSync(join(dataDir, LOCK_FILE), 'utf8'), `${third.pid}\n`, 'a dead owner’s lock is taken over');
  t.equal(await collect(third.url, customEvent(cred, { messageId: 'after-restart' })), 200, 'and the data is there (the org)');
  await third.stop();
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'a clean stop removes the lock file');
});

t.test('apps built in one process: the second is refused until the first closes', async (t) => {
  const dataDir = t.testdir();
  const first = await startTestApp(t, { dataDir });
  await t.rejects(startTestApp(t, { dataDir }), DataDirInUseError, 'the second build is refused');
  t.ok(existsSync(join(dataDir, LOCK_FILE)), 'the refused build left the first one’s lock alone');
  await first.close();
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'close releases it');
  const second = await startTestApp(t, { dataDir });
  t.ok(second.app.control, 'then a new app starts');
});

t.test('stale or hostile lock files are taken over; a live foreign pid is not', { timeout: scaled(180_000) }, async (t) => {
  const cases: Array<[string, string]> = [
    ['not a pid', 'garbage\n'],
    ['empty', ''],
    ['negative', '-1\n'],
    ['huge', '99999999999999999999\n'],
    ['our own pid (a container restarted with the same numbering)', `${process.pid}\n`],
  ];
  for (const [name, content] of cases) {
    const dataDir = t.testdir();
    writeFileSync(join(dataDir, LOCK_FILE), content);
    const h = await startTestApp(t, { dataDir });
    t.equal(readFileSync(join(dataDir, LOCK_FILE), 'utf8'), `${process.pid}\n`, `${name}: taken over`);
    await h.close();
  }

  // The parent of this test process is alive and is not this process.
  const dataDir = t.testdir();
  writeFileSync(join(dataDir, LOCK_FILE), `${process.ppid}\n`);
  await t.rejects(startTestApp(t, { dataDir }), {
    name: 'DataDirInUseError',
    message: `DATA_DIR ${dataDir} is in use by another audience process (pid ${process.ppid}); stop it or use another DATA_DIR`,
  });
  t.equal(readFileSync(join(dataDir, LOCK_FILE), 'utf8'), `${process.ppid}\n`, 'the live owner’s file is untouched');
  t.notOk(existsSync(join(dataDir, 'log')), 'nothing in DATA_DIR was opened');
});

t.test('DuckDB’s own lock, held by another program, is one line too', async (t) => {
  const dataDir = t.testdir();
  // This test process plays the other program: it holds audience.duckdb open.
  const instance = await DuckDBInstance.create(join(dataDir, 'audience.duckdb'));
  const connection = await instance.connect();
  t.teardown(() => {
    connection.closeSync();
    instance.closeSync();
  });
  const refused = await startRefused(dataDir);
  t.equal(refused.code, 1);
  t.equal(
    refused.stderr,
    `audience: DATA_DIR ${dataDir}: audience.duckdb is locked by another process (pid ${process.pid}); stop it or use another DATA_DIR\n`,
  );
  t.notMatch(refused.stdout, /storage worker failed|Could not set lock/, 'DuckDB’s message is not logged besides');
  t.notOk(existsSync(join(dataDir, LOCK_FILE)), 'the refused start released its own lock');
});
