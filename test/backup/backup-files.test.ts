/**
 * Backups and restores hold only regular files: a backup leaves out the query files the service refuses
 * and never follows a link out of DATA_DIR; a restore (from a folder or an archive) and the CLI's
 * unpacking of a backup refuse links, hard links, FIFOs, devices, `..` and absolute paths with one line,
 * and create nothing of them, anywhere.
 */
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, linkSync, lstatSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import t, { type Test } from 'tap';
import { Header, type HeaderData, list } from 'tar';
import { BACKUP_FORMAT, copyDatabaseFile } from '../../src/backup/backup.js';
import { restoreBackup, RestoreError } from '../../src/backup/restore.js';
import { unpackBackup } from '../../src/backup/unpack.js';
import { type Config, readConfig } from '../../src/core/config.js';
import { ADMIN_KEY, appsDir, startTestApp, type TestApp, STORAGE_PROCESS } from '../helpers/app.js';
import { BOOKING_TRIGGER } from '../helpers/flows.js';
import { entryArgs } from '../helpers/entry.js';
import { ROOT } from '../helpers/paths.js';

const SECRET = 'admin-secret-5f0c1e9a7b';

function config(dir: string): Config {
  return { ...readConfig({}), dataDir: join(dir, 'data'), queriesDir: join(dir, 'queries') };
}

/**
 * A service with org acme, its trigger `good` saved, and a secret file in DATA_DIR, which is `root`/data:
 * the rest of `root` (the test's folder: t.testdir() makes it anew at each call) is outside DATA_DIR.
 */
async function service(t: Test, root: string): Promise<{ h: TestApp; secret: string }> {
  const h = await startTestApp(t, { dataDir: join(root, 'data'), config: STORAGE_PROCESS });
  await h.createOrg('acme');
  t.equal((await h.admin('PUT', '/admin/v1/orgs/acme/triggers/good', { sql: BOOKING_TRIGGER })).statusCode, 200);
  const secret = join(h.dataDir, 'admin.key');
  writeFileSync(secret, `${SECRET}\n`, { mode: 0o600 });
  return { h, secret };
}

function entries(archive: Buffer, dir: string): Array<{ path: string; type: string; body: string }> {
  const file = join(dir, 'archive.tar');
  writeFileSync(file, archive);
  const found: Array<{ path: string; type: string; body: string }> = [];
  list({
    file,
    sync: true,
    onReadEntry: (entry) => {
      const item = { path: entry.path, type: entry.type, body: '' };
      found.push(item);
      entry.on('data', (chunk: Buffer) => (item.body += chunk.toString()));
    },
  });
  return found;
}

/** A tar archive of the given entries, written header by header (tar itself would not write most of these). */
function tarOf(items: Array<{ path: string; type: string; body?: string; linkpath?: string }>): Buffer {
  const blocks = items.flatMap(({ path, type, body = '', linkpath }) => {
    const data = Buffer.from(body);
    const header = Buffer.alloc(512);
    new Header({ path, type: type as HeaderData['type'], size: data.length, mode: 0o644, mtime: new Date(0), ...(linkpath ? { linkpath } : {}), ...(type === 'CharacterDevice' ? { devmaj: 1, devmin: 5 } : {}) }).encode(header, 0);
    const padded = Buffer.alloc(Math.ceil(data.length / 512) * 512);
    data.copy(padded);
    return [header, padded];
  });
  return Buffer.concat([...blocks, Buffer.alloc(1024)]);
}

/** Every link anywhere under `dir`. */
function linksUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isSymbolicLink())
    .map((entry) => join(entry.parentPath, entry.name));
}

t.test('a backup holds only the query files the service reads, and never follows a link out of DATA_DIR', async (t) => {
  const root = appsDir(t);
  const { h, secret } = await service(t, root);
  const acme = join(h.dataDir, 'queries', 'acme');
  mkdirSync(join(acme, 'segments'));
  linkSync(secret, join(acme, 'hard.sql'));
  symlinkSync(join(h.dataDir, 'webhook.key'), join(acme, 'leak.sql'));
  symlinkSync(secret, join(acme, 'segments', 'leak.sql'));
  execFileSync('mkfifo', [join(acme, 'pipe.sql')]);
  writeFileSync(join(acme, 'big.sql'), `-- ${'x'.repeat(400_000)}`);

  // DATA_DIR/webhook.key as a link to a file outside DATA_DIR.
  const outside = join(root, 'webhook.key');
  renameSync(join(h.dataDir, 'webhook.key'), outside);
  symlinkSync(outside, join(h.dataDir, 'webhook.key'));
  const refused = await h.admin('GET', '/admin/v1/backup');
  t.equal(refused.statusCode, 409);
  t.match(refused.json(), { code: 'backup_file_refused', detail: 'DATA_DIR/webhook.key is a symbolic link; only regular files are copied' });
  t.notOk(refused.body.includes(readFileSync(outside, 'utf8').trim()), 'the key is not in the answer');
  rmSync(join(h.dataDir, 'webhook.key'));
  renameSync(outside, join(h.dataDir, 'webhook.key'));

  const res = await h.admin('GET', '/admin/v1/backup');
  t.equal(res.statusCode, 200);
  const found = entries(res.rawPayload, root);
  t.same(found.filter((e) => e.type !== 'File').map((e) => e.path), [], 'regular files only');
  t.same(found.map((e) => e.path).filter((path) => path.startsWith('queries/')), ['queries/acme/good.sql'], 'only the query file the service reads');
  t.notOk(res.rawPayload.includes(SECRET), 'no secret reached through a hard link');
  t.match(JSON.parse(found.find((e) => e.path === 'manifest.json')!.body), { format: BACKUP_FORMAT, queryFiles: 1, webhookKey: true });

  // The same rule for an org database and its WAL.
  const dir = join(root, 'files');
  mkdirSync(dir);
  const within = await realpath(dir);
  writeFileSync(join(dir, 'real.duckdb'), 'db');
  symlinkSync(secret, join(dir, 'link.duckdb'));
  await t.rejects(copyDatabaseFile(join(dir, 'link.duckdb'), join(dir, 'copy1.duckdb'), 'DATA_DIR/orgs/link.duckdb', within), { message: 'DATA_DIR/orgs/link.duckdb is a symbolic link; only regular files are copied' });
  symlinkSync(secret, join(dir, 'real.duckdb.wal'));
  await t.rejects(copyDatabaseFile(join(dir, 'real.duckdb'), join(dir, 'copy2.duckdb'), 'DATA_DIR/orgs/real.duckdb', within), { message: /real\.duckdb\.wal is a symbolic link/ });
  t.notOk(existsSync(join(dir, 'copy1.duckdb')) || existsSync(join(dir, 'copy2.duckdb.wal')), 'nothing copied through a link');
});

t.test('restore refuses a backup folder with anything but folders and regular files, and writes nothing', async (t) => {
  const root = appsDir(t);
  const { h, secret } = await service(t, root);
  const archive = (await h.admin('GET', '/admin/v1/backup')).rawPayload;
  await h.close();
  const genuine = join(root, 'genuine');
  mkdirSync(genuine);
  await unpackBackup(Readable.from(archive), genuine);

  const cases: Array<[string, (dir: string) => void, RegExp]> = [
    ['webhook.key a link', (dir) => (rmSync(join(dir, 'webhook.key')), symlinkSync(secret, join(dir, 'webhook.key'))), /webhook\.key is a symbolic link/],
    ['a database a link', (dir) => (rmSync(join(dir, 'orgs', 'acme.duckdb')), symlinkSync(secret, join(dir, 'orgs', 'acme.duckdb'))), /acme\.duckdb is a symbolic link/],
    ['the manifest a link', (dir) => (rmSync(join(dir, 'manifest.json')), symlinkSync(secret, join(dir, 'manifest.json'))), /manifest\.json is a symbolic link/],
    ['a query file a link', (dir) => symlinkSync(secret, join(dir, 'queries', 'acme', 'x.sql')), /x\.sql is a symbolic link/],
    ['a query file a hard link', (dir) => linkSync(secret, join(dir, 'queries', 'acme', 'x.sql')), /x\.sql has 2 hard links/],
    ['a query file a FIFO', (dir) => execFileSync('mkfifo', [join(dir, 'queries', 'acme', 'x.sql')]), /x\.sql is a FIFO/],
    ['the org folder a link', (dir) => (rmSync(join(dir, 'queries', 'acme'), { recursive: true }), symlinkSync(join(h.dataDir, 'queries', 'acme'), join(dir, 'queries', 'acme'))), /queries\/acme is a symbolic link/],
  ];
  for (const [name, plant, reason] of cases) {
    const from = join(root, name.replaceAll(' ', '-'));
    execFileSync('cp', ['-a', genuine, from]);
    plant(from);
    const into = join(root, `into-${name.replaceAll(' ', '-')}`);
    const error = await restoreBackup(from, config(into)).then(
      () => undefined,
      (e: Error) => e,
    );
    t.ok(error instanceof RestoreError, `${name}: refused`);
    t.match(error?.message, reason, name);
    t.match(error?.message, /nothing was restored$/, `${name}: says nothing was restored`);
    t.notOk(error?.message.includes('\n') || error?.message.includes(SECRET.slice(0, 8)), `${name}: one line, no content of the target`);
    t.notOk(existsSync(join(into, 'data', 'orgs')) || existsSync(join(into, 'data', 'webhook.key')) || existsSync(join(into, 'queries')), `${name}: nothing written`);
  }
  t.equal(readFileSync(secret, 'utf8'), `${SECRET}\n`, 'the secret is untouched');
});

t.test('restore writes only into new names: never through a link already in DATA_DIR or QUERIES_DIR', async (t) => {
  const root = appsDir(t);
  const { h } = await service(t, root);
  const archive = (await h.admin('GET', '/admin/v1/backup')).rawPayload;
  await h.close();
  const file = join(root, 'backup.tar');
  writeFileSync(file, archive);
  const outside = join(root, 'outside');
  mkdirSync(outside);

  const linked = join(root, 'linked');
  mkdirSync(join(linked, 'queries'), { recursive: true });
  symlinkSync(outside, join(linked, 'queries', 'acme'));
  await t.rejects(restoreBackup(file, config(linked)), new RestoreError(`${join(linked, 'queries', 'acme')} is a symbolic link; only a real folder is written; nothing was restored`));
  t.same(readdirSync(outside), [], 'nothing written through the linked org folder');
  t.same(readdirSync(join(linked, 'data')), [], 'no database copied, no staging folder left');

  const dangling = join(root, 'dangling');
  mkdirSync(join(dangling, 'data'), { recursive: true });
  symlinkSync(join(outside, 'planted.key'), join(dangling, 'data', 'webhook.key'));
  const report = await restoreBackup(file, config(dangling));
  t.match(report, { orgs: ['acme'], queryFiles: 1, webhookKey: false, warnings: [] }, 'the archive itself restores; a webhook.key already there (a link) is kept');
  t.notOk(existsSync(join(outside, 'planted.key')), 'and not written through');
  t.ok(lstatSync(join(dangling, 'queries', 'acme', 'good.sql')).isFile());
  t.same(linksUnder(join(dangling, 'data')), [join(dangling, 'data', 'webhook.key')], 'no link but the one planted');
});

t.test('a crafted archive is refused by restore and by the CLI backup; nothing of it is created', async (t) => {
  const dir = t.testdir();
  const secret = join(dir, 'secret.key');
  writeFileSync(secret, SECRET);
  const absolute = `/tmp/audience-absolute-${process.pid}.txt`;
  const manifest = JSON.stringify({ format: BACKUP_FORMAT, version: 1, log: { kind: 'embedded', compactedSeq: 0 }, orgs: [], webhookKey: false });
  const cases: Array<[{ path: string; type: string; body?: string; linkpath?: string }, RegExp]> = [
    [{ path: 'queries/acme/x.sql', type: 'SymbolicLink', linkpath: '../../webhook.key' }, /"queries\/acme\/x\.sql" is a symbolic link/],
    [{ path: 'leak.sql', type: 'SymbolicLink', linkpath: secret }, /"leak\.sql" is a symbolic link/],
    [{ path: 'hard.sql', type: 'Link', linkpath: secret }, /"hard\.sql" is a hard link/],
    [{ path: '../escape.txt', type: 'File', body: 'escaped' }, /"\.\.\/escape\.txt" leads out of the folder/],
    [{ path: absolute, type: 'File', body: 'absolute' }, /has an absolute path/],
    [{ path: 'pipe', type: 'FIFO' }, /"pipe" is a FIFO/],
    [{ path: 'zero', type: 'CharacterDevice' }, /"zero" is a device file/],
  ];
  let answer: Buffer = Buffer.alloc(0);
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/x-tar' }).end(answer));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise((resolve) => server.close(resolve)));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  for (const [i, [hostile, reason]] of cases.entries()) {
    const archive = tarOf([{ path: 'control.json', type: 'File', body: '[]' }, hostile, { path: 'manifest.json', type: 'File', body: manifest }]);
    const file = join(dir, 'crafted.tar');
    writeFileSync(file, archive);
    const into = join(dir, `into-${i}`);
    const error = await restoreBackup(file, config(into)).then(
      () => undefined,
      (e: Error) => e,
    );
    t.ok(error instanceof RestoreError, `${hostile.path}: restore refused`);
    t.match(error?.message, reason);
    t.match(error?.message, /; a backup holds only regular files and folders; nothing was restored$/);
    t.same(readdirSync(join(into, 'data')), [], `${hostile.path}: nothing left in DATA_DIR`);

    answer = archive;
    const target = join(dir, `cli-${i}`);
    const cli = await new Promise<{ code: number; stderr: string }>((resolve) =>
      execFile(process.execPath, [...entryArgs('cli'), 'backup', target], { cwd: ROOT, env: { ...process.env, AUDIENCE_URL: url, ADMIN_KEY } }, (e, _stdout, stderr) =>
        resolve({ code: e ? Number(e.code) : 0, stderr }),
      ),
    );
    t.equal(cli.code, 4, `${hostile.path}: the CLI backup fails as for a failing service`);
    t.match(cli.stderr, reason);
    t.match(cli.stderr, /^audiencectl: http:\/\/127\.0\.0\.1:\d+ sent an archive that is not a backup \(.*\); delete .*\n$/, 'one line');
    t.same(linksUnder(target), [], 'no link created');
    t.same(readdirSync(target), ['control.json'], 'only the regular file before it');
  }
  for (const escaped of [join(dir, 'escape.txt'), join(dir, 'into-3', 'escape.txt'), join(dir, 'into-3', 'data', 'escape.txt'), absolute]) t.notOk(existsSync(escaped), `${escaped} not created`);
  t.equal(readFileSync(secret, 'utf8'), SECRET, 'the secret is untouched');
});
