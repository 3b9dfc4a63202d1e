/**
 * The scenario of damaged-instance.test.ts, run in a process of its own started without tap's
 * process-info hook: that hook listens for SIGXFSZ and re-raises it, so a storage process started under
 * it dies of the file-size limit this scenario sets, where the service's processes (Node ignores
 * SIGXFSZ) get EFBIG from the write, as on a full disk. Prints what it saw as one JSON object.
 * Usage: node --import tsx damaged-instance.scenario.ts <dir>
 */
import { execFileSync } from 'node:child_process';
import { closeSync, openSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SINGLE_SHARD } from '../../src/core/shard.js';
import { OrgUnavailable } from '../../src/core/unavailable.js';
import { StorageProcess } from '../../src/storage/storage-client.js';
import { scaled } from '../helpers/deadline.js';

export const VICTIM = 'victim_' + 'x'.repeat(33);
const BYSTANDER = 'bystander';
export const ROWS = 200_000;
/** DuckDB's file layout: three 4 KiB headers, then blocks. */
const HEADER_BYTES = 3 * 4096;

/** How a call came out: what the test asserts on. */
export type Seen = { ok: true } | { ok: false; name: string; slug?: string; message: string };

async function seen(work: Promise<unknown>): Promise<Seen> {
  return work.then(
    () => ({ ok: true as const }),
    (error: Error) => ({ ok: false as const, name: error.name, ...(error instanceof OrgUnavailable ? { slug: error.slug } : {}), message: error.message }),
  );
}

async function main(dir: string): Promise<Record<string, unknown>> {
  const report: Record<string, unknown> = {};
  const restarts: string[] = [];
  const worker = await StorageProcess.start({
    data: {
      orgsDir: dir,
      limits: { maxOpen: 4, memoryLimit: '128MB', threads: 1, idleCloseMs: 600_000, reopenDamagedMs: 0 },
      checkpointFile: join(dir, 'log.checkpoint'),
      shard: SINGLE_SHARD,
      threadPoolSize: 4,
    },
    process: {},
    events: { onCompacted: () => {}, onMetric: () => {}, onError: () => {}, onRestarted: (reason) => void restarts.push(reason) },
  });
  try {
    const generation = worker.generation;
    const victim = worker.org(VICTIM);
    const bystander = worker.org(BYSTANDER);
    let written = 0;
    const bystanderWorks = async () => {
      await bystander.run('INSERT OR REPLACE INTO org_settings VALUES ($1, $2)', [BYSTANDER, `€${++written}`]);
      const [row] = await bystander.all<{ currency_symbol: string }>('SELECT currency_symbol FROM org_settings');
      return row?.currency_symbol === `€${written}`;
    };
    await victim.run(`CREATE TABLE bulk AS SELECT i, md5(i::VARCHAR) || repeat('y', 64) AS x FROM range(0, ${ROWS}) t(i)`);
    await victim.run('CHECKPOINT');
    report.bystanderBefore = await bystanderWorks();

    // 1. A FATAL error: the checkpoint cannot write past the file's size; DuckDB invalidates the instance.
    const pids = execFileSync('pgrep', ['-P', String(process.pid), '-f', 'storage-process'], { encoding: 'utf8' }).trim().split('\n');
    if (pids.length !== 1) throw new Error(`expected one storage process, found ${pids.join(', ')}`);
    const pid = pids[0]!;
    const file = join(dir, `${VICTIM}.duckdb`);
    execFileSync('prlimit', ['--pid', pid, `--fsize=${statSync(file).size}:unlimited`]);
    await victim.run(`INSERT INTO bulk SELECT i, 'late' FROM range(${ROWS}, ${ROWS + 1000}) t(i)`);
    report.fatal = await seen(victim.run('CHECKPOINT'));
    report.unavailableAfterFatal = await worker.call({ op: 'unavailable' });
    report.bystanderBesideFatal = await bystanderWorks();
    execFileSync('prlimit', ['--pid', pid, '--fsize=unlimited:unlimited']);
    // Its instance is closed and a new one opened (at once: the pause is 0 here).
    const failures: Seen[] = [];
    for (const deadline = Date.now() + scaled(30_000); Date.now() < deadline; ) {
      const read = await worker.org(VICTIM).all<{ n: bigint }>('SELECT count(*) AS n FROM bulk').then(
        ([row]) => row!.n,
        (error: Error) => error,
      );
      if (typeof read === 'bigint') {
        report.countAfterReopen = Number(read);
        break;
      }
      if (!(read instanceof OrgUnavailable)) failures.push({ ok: false, name: read.name, message: read.message });
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    report.failuresWhileReopening = failures.slice(0, 3);

    // 2. A bad block read at run time: the new instance has not read the table's blocks yet.
    const blocks = await victim.all<{ block_id: bigint }>("SELECT DISTINCT block_id FROM pragma_storage_info('bulk') WHERE block_id >= 0");
    const [size] = await victim.all<{ block_size: bigint }>('SELECT block_size FROM pragma_database_size()');
    report.blocks = blocks.length;
    const fd = openSync(file, 'r+');
    for (const { block_id } of blocks) writeSync(fd, Buffer.alloc(64, 0xa5), 0, 64, HEADER_BYTES + Number(block_id) * Number(size!.block_size));
    closeSync(fd);
    report.badBlock = await seen(victim.all('SELECT sum(length(x)) FROM bulk'));
    report.unavailableAfterBadBlock = await worker.call({ op: 'unavailable' });
    report.laterCalls = [await seen(victim.all('SELECT 1')), await seen(victim.all('SELECT 1')), await seen(victim.run('CHECKPOINT'))];
    report.bystanderAfter = await bystanderWorks();
    report.restarts = restarts;
    report.sameProcess = worker.generation === generation;
    return report;
  } finally {
    await worker.close();
  }
}

// Run as the entry (the test imports its constants only).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv[2]!).then(
    (report) => process.stdout.write(JSON.stringify(report) + '\n'),
    (error: Error) => {
      process.stderr.write(`${error.stack}\n`);
      process.exit(1);
    },
  );
}
