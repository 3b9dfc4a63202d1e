/**
 * Damage found while the storage process runs (issue 37, finding 3), with real files in the real
 * process (the scenario: damaged-instance.scenario.ts): DuckDB invalidates an org's instance after a
 * FATAL error (a checkpoint that cannot grow its file: RLIMIT_FSIZE on the process), and a statement reads
 * a block garbled on disk. Neither ends the storage process (a restart loop would stop every org); the
 * org answers OrgUnavailable (503) from then on, never DuckDB's error (500) at each call; the instance
 * DuckDB gave up on is closed and a new one opened, holding every committed row; the other org reads
 * and writes throughout.
 */
import { execFile } from 'node:child_process';
import t from 'tap';
import { ROWS, VICTIM } from './damaged-instance.scenario.js';
import { scaled } from '../helpers/deadline.js';
import { sibling } from '../helpers/paths.js';

/** The scenario of the running kind: its TypeScript through tsx, or the compiled file. */
const SCENARIO = sibling(import.meta.url, 'damaged-instance.scenario');
const NODE_ARGS = [...(SCENARIO.endsWith('.ts') ? ['--import=tsx'] : []), SCENARIO];

t.test('an invalidated instance and a bad block found at run time stay with their org', { timeout: scaled(180_000) }, async (t) => {
  // Without tap's process-info hook in NODE_OPTIONS (see the scenario's header).
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      '/bin/sh',
      ['-c', 'exec env -u NODE_OPTIONS "$0" "$@"', process.execPath, ...NODE_ARGS, t.testdir()],
      { timeout: 150_000, maxBuffer: 1 << 20 },
      (error, out, err) => (error ? reject(new Error(`${error.message}\n${err}`)) : resolve(out)),
    ),
  );
  const report = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, unknown>;
  const unavailable = { ok: false, name: 'OrgUnavailable', slug: VICTIM, message: new RegExp(`org "${VICTIM}"`) };
  t.equal(report.bystanderBefore, true, 'the other org works');
  t.match(report.fatal, unavailable, 'the failed checkpoint answers OrgUnavailable, not the FATAL error');
  t.match(report.unavailableAfterFatal, { [VICTIM]: /^FATAL Error/ }, 'listed as unavailable, with DuckDB reason');
  t.equal(report.bystanderBesideFatal, true, 'the other org reads and writes beside it');
  t.same(report.failuresWhileReopening, [], 'no call failed with "database has been invalidated" (a 500) meanwhile');
  t.equal(report.countAfterReopen, ROWS + 1000, 'a new instance holds every committed row');
  t.ok((report.blocks as number) > 1, `the table spans ${String(report.blocks)} blocks`);
  t.match(report.badBlock, unavailable, 'reading a bad block answers OrgUnavailable');
  t.match(report.unavailableAfterBadBlock, { [VICTIM]: /^IO Error: Corrupt database file/ });
  t.match(report.laterCalls, [unavailable, unavailable, unavailable], 'and so does every later call while its file is unchanged');
  t.equal(report.bystanderAfter, true, 'the other org still reads and writes');
  t.same(report.restarts, [], 'the storage process never ended');
  t.equal(report.sameProcess, true);
});
