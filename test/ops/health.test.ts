/**
 * /readyz and /healthz tell the truth (issue 12, item 15): a killed storage process (replaced, the
 * service ready throughout), a frozen (SIGSTOPped) NATS server and a full disk under the embedded log,
 * each with the real parts.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import t, { type Test } from 'tap';
import { customEvent, startTestApp, waitFor, type TestApp, STORAGE_PROCESS } from '../helpers/app.js';
import { scaled } from '../helpers/deadline.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { CALL_WAIT_MS } from '../../src/storage/storage-client.js';

const probe = (h: TestApp, url: '/readyz' | '/healthz') => h.app.inject({ method: 'GET', url });

t.test('storage process killed: /readyz and /healthz stay 200 with a note, a new process takes over, nothing is lost', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'before' }))).statusCode, 200);
  await h.compacted();
  const storage = h.app.orgStorage!.process!;
  const first = storage.generation;

  storage.crash();
  // Collect and lookups do not need the storage process: probes stay ready while it is replaced.
  const answers = await Promise.all(Array.from({ length: 20 }, () => probe(h, '/readyz')));
  t.same([...new Set(answers.map((r) => r.statusCode))], [200], 'every concurrent /readyz answers 200');
  t.equal((await probe(h, '/healthz')).statusCode, 200, '/healthz 200: the supervisor restarts it, not an operator');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'during' }))).statusCode, 200, 'collect answers meanwhile');

  await waitFor(async () => storage.generation > first && (await storage.health()).note === undefined, 60_000);
  const ready = await probe(h, '/readyz');
  t.equal(ready.statusCode, 200);
  t.same(ready.json().checks.storage, { ok: true }, `the new process answers: ${JSON.stringify(ready.json().checks)}`);
  // Every acknowledged event reaches its database through the new process.
  await h.compacted();
  const ids = (await h.admin('GET', '/admin/v1/orgs/acme/events/samples?env=production')).json().events.map((e: { messageId: string }) => e.messageId);
  t.same(ids.sort(), ['before', 'during'], 'both events stored, once each');
});

t.test('a call made while the storage process restarts waits for the new one', async (t) => {
  const h = await startTestApp(t, { config: STORAGE_PROCESS });
  await h.createOrg('acme');
  const storage = h.app.orgStorage!.process!;
  storage.crash();
  const started = Date.now();
  const list = await h.admin('GET', '/admin/v1/orgs/acme/events/samples');
  const waited = Date.now() - started;
  if (list.statusCode === 200) t.pass(`answered by the new process after ${waited} ms`);
  else {
    // A cold start on a loaded machine can take longer than a call waits: then the 503 comes only after
    // the whole wait, says why, and the next call is answered by the new process.
    t.equal(list.statusCode, 503, list.body);
    t.match(list.json(), { code: 'storage_unavailable', detail: /starting/ });
    t.ok(waited >= CALL_WAIT_MS - 50, `the 503 came after waiting ${waited} ms (a call waits ${CALL_WAIT_MS} ms)`);
    await waitFor(async () => storage.running, 60_000);
    const again = await h.admin('GET', '/admin/v1/orgs/acme/events/samples');
    t.equal(again.statusCode, 200, `answered by the new process: ${again.body}`);
  }
  t.ok(storage.generation > 1);
});

const natsTest = hasNatsServerBinary() ? t.test : t.skip;
if (!hasNatsServerBinary()) t.comment('skipped: the frozen-NATS test needs /usr/sbin/nats-server');

natsTest('NATS frozen (SIGSTOP): /readyz 503 within the check timeout, /healthz 200; thawed: ready again', async (t) => {
  // DATA_DIR first: startNatsServer puts its store inside the test dir, a later t.testdir() would wipe it.
  const dataDir = t.testdir();
  const nats = await startNatsServer(t);
  const h = await startTestApp(t, { natsUrl: nats.url, dataDir, config: STORAGE_PROCESS });
  t.equal((await probe(h, '/readyz')).statusCode, 200, 'ready');

  await nats.freeze();
  t.teardown(() => nats.thaw()); // so closing the app does not wait on a stopped server
  t.equal(h.app.eventLog!.isAvailable(), true, 'the client still thinks it is connected: that alone would lie');
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 10 }, () => probe(h, '/readyz')));
  const elapsed = Date.now() - started;
  t.same([...new Set(answers.map((r) => r.statusCode))], [503], '/readyz answers 503 while NATS is frozen');
  t.ok(elapsed < scaled(5_000), `and answers (${elapsed} ms), bounded by the check timeout rather than hanging`);
  t.match(answers[0]!.json(), { code: 'not_ready', detail: /log: NATS did not answer a ping within \d+ ms/ });
  t.match(answers[0]!.json().checks.log, { ok: false, fatal: false });
  t.equal((await probe(h, '/healthz')).statusCode, 200, '/healthz 200: the client recovers by itself, no restart');

  nats.thaw();
  await waitFor(async () => (await probe(h, '/readyz')).statusCode === 200, 10_000);
  t.pass('/readyz 200 again once NATS answers');
  t.equal((await probe(h, '/healthz')).statusCode, 200, '/healthz 200 throughout');
});

/** Mounting a tmpfs needs root (CAP_SYS_ADMIN): undefined when this machine can, else why not. */
function whyNoTmpfs(): string | undefined {
  const dir = mkdtempSync(join(tmpdir(), 'audience-tmpfs-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir], { stdio: 'pipe' });
    execFileSync('umount', [dir]);
    return undefined;
  } catch (error) {
    return `cannot mount a tmpfs (needs root): ${(error as Error).message.split('\n')[0]}`;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * A tmpfs of `size` at `dir`: mounted outside the test's fixture dir, which tap removes before running
 * teardowns, and linked in as `dir`. Lazily unmounted (the app may still hold the log file open).
 */
function mountTmpfs(t: Test, dir: string, size: string): void {
  const mountPoint = mkdtempSync(join(tmpdir(), 'audience-tmpfs-'));
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', mountPoint], { stdio: 'pipe' });
  t.teardown(() => {
    execFileSync('umount', ['-l', mountPoint]);
    rmSync(mountPoint, { recursive: true, force: true });
  });
  symlinkSync(mountPoint, dir);
}

const noTmpfs = whyNoTmpfs();
if (noTmpfs) t.comment(`skipped: the disk-full test: ${noTmpfs}`);

t.test('disk full under the embedded log: collect 503, /readyz 503; space freed: ready and accepting again', { skip: noTmpfs ?? false }, async (t) => {
  const dataDir = t.testdir();
  const logDir = join(dataDir, 'log');
  mountTmpfs(t, logDir, '1m');
  const h = await startTestApp(t, { dataDir, config: STORAGE_PROCESS });
  const cred = await h.createOrg('acme');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'before' }))).statusCode, 200);
  t.equal((await probe(h, '/readyz')).statusCode, 200, 'ready with space');

  // Fill the file system: the filler gets every free page; the log file keeps only its last page's slack.
  const filler = join(logDir, 'filler');
  await writeFile(filler, Buffer.alloc(2 * 1024 * 1024)).then(
    () => t.fail('the 1 MiB tmpfs took 2 MiB'),
    (error: NodeJS.ErrnoException) => t.equal(error.code, 'ENOSPC', 'the disk is full'),
  );
  // Events fit in the slack of the log's last page until one needs a new page.
  const accepted: string[] = ['before'];
  let refused: Awaited<ReturnType<TestApp['collect']>> | undefined;
  for (let i = 0; i < 100 && !refused; i++) {
    const res = await h.collect(customEvent(cred.production, { messageId: `full-${i}` }));
    if (res.statusCode === 200) accepted.push(`full-${i}`);
    else refused = res;
  }
  t.ok(refused, 'an event that needs new disk space is refused');
  t.equal(refused!.statusCode, 503, 'with 503 (not 200, not 500)');
  t.match(refused!.json(), { code: 'log_unavailable' });
  t.equal(refused!.headers['retry-after'], '1');

  const ready = await probe(h, '/readyz');
  t.equal(ready.statusCode, 503, '/readyz 503 while the disk is full');
  t.match(ready.json().detail, /log: embedded log cannot write: ENOSPC/, 'names the failed write');
  t.match(ready.json().detail, /disk: low disk space: .*log has 0\.0 MiB free/, 'and the free space');
  t.equal((await probe(h, '/healthz')).statusCode, 200, '/healthz 200: freeing space fixes it, not a restart');
  const again = await h.collect(customEvent(cred.production, { messageId: 'still-full' }));
  t.equal(again.statusCode, 503, 'still refused while full');

  // No traffic needed to notice the space is back: the probe itself tries a write.
  await rm(filler);
  t.equal((await probe(h, '/readyz')).statusCode, 200, '/readyz 200 once space is freed');
  t.equal((await h.collect(customEvent(cred.production, { messageId: 'after' }))).statusCode, 200, 'accepted again');
  await h.compacted();
  const rows = await h.db().all<{ message_id: string }>('SELECT message_id FROM events ORDER BY message_id');
  t.same(rows.map((r) => r.message_id).sort(), [...accepted, 'after'].sort(), 'what was acknowledged is stored; what got 503 is not');
});
