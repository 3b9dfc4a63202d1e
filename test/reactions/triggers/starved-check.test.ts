/**
 * A check the machine starves of CPU answers 503 sandbox_busy (try again), and goes on using its time: the
 * same SQL sent again gets that check's verdict. Before, every try started from nothing and was starved
 * again, so on a machine kept busy (two busy loops beside the suite) a heavy query's preview answered 503
 * forever and never got its 422. The starving is a fault injected on real checker processes: they are
 * stopped (SIGSTOP) but for 50 ms in every 500: a tenth of a core at most, less than half of a check's
 * time in four times its time.
 */
import { readdirSync, readFileSync } from 'node:fs';
import t from 'tap';
import { SqlChecker } from '../../../src/reactions/triggers/sql-checker.js';
import { SqlRefused } from '../../../src/reactions/triggers/sql-guard.js';
import { SandboxBusy } from '../../../src/db/untrusted.js';
import { scaled } from '../../helpers/deadline.js';

const SIX = 'identity, identity_type, ts, event_type, event_id, event_raw';
const WINDOW = 'ts > {cursor_start_time} AND ts <= {cursor_end_time}';
/** Folded while the check prepares it: ~20 s of CPU, far over any budget here. */
const HEAVY = `SELECT ${SIX}, levenshtein(repeat('ab', 50000), repeat('ba', 50000)) AS d FROM event_triggers WHERE ${WINDOW}`;
const LIGHT = `SELECT ${SIX} FROM event_triggers WHERE ${WINDOW}`;
/** TRIGGER_TIMEOUT_MS of the first test: a check is starved at 4 times it, given up at 20 times it. */
const BUDGET = scaled(500);
/** How long the first test starves the checkers: past two tries after the first answer, then the load is gone. */
const STARVED_FOR = 12 * BUDGET;
const MEMORY = { memoryLimit: '256MiB', memoryLimitBytes: 256 * 2 ** 20 };
/**
 * The budget of each test's first check, which starts the checker processes (Node, DuckDB, the org attached):
 * not what is tested, and over 500 ms on a loaded machine (a clean-clone CI of 2026-12-02 had it refused).
 */
const WARM_UP = scaled(10_000);

/** This process's checker processes now. */
function checkerPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === process.pid && readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('sql-check-process')) pids.push(Number(entry));
    } catch {
      // ended meanwhile
    }
  }
  return pids;
}

function signal(pids: number[], name: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, name);
    } catch {
      // ended meanwhile
    }
  }
}

/** Keeps every checker stopped but for `runMs` in every `periodMs`; returns what ends it (and continues them). */
function starve(runMs: number, periodMs: number): () => void {
  let stopped = true;
  signal(checkerPids(), 'SIGSTOP');
  const timer = setInterval(() => {
    const pids = checkerPids();
    signal(pids, 'SIGCONT');
    setTimeout(() => stopped && signal(pids, 'SIGSTOP'), runMs);
  }, periodMs);
  return () => {
    stopped = false;
    clearInterval(timer);
    signal(checkerPids(), 'SIGCONT');
  };
}

async function outcome(promise: Promise<unknown>): Promise<{ kind: string; message: string }> {
  try {
    await promise;
    return { kind: 'checked', message: '' };
  } catch (error) {
    if (error instanceof SqlRefused) return { kind: 'refused', message: error.reason };
    if (error instanceof SandboxBusy) return { kind: 'busy', message: error.message };
    throw error;
  }
}

/** Tries again, as a client would, while the answer is busy (a loaded machine may starve any check). */
async function untilNotBusy(send: () => Promise<{ kind: string; message: string }>): Promise<{ kind: string; message: string }> {
  const deadline = Date.now() + scaled(30_000);
  for (;;) {
    const answer = await send();
    if (answer.kind !== 'busy' || Date.now() > deadline) return answer;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

t.test('a starved check answers busy, goes on, and the same SQL sent again gets its verdict', async (t) => {
  const checker = new SqlChecker(MEMORY);
  t.teardown(() => checker.close());
  t.equal((await outcome(checker.check(LIGHT, 'acme', 'trigger', WARM_UP))).kind, 'checked', 'the checkers are started');

  const started = new Set(checkerPids());
  const sentAt = Date.now();
  const stop = starve(50, 500);
  t.teardown(stop);
  const first = await outcome(checker.check(HEAVY, 'acme', 'trigger', BUDGET));
  t.equal(first.kind, 'busy', `a starved check is told to try again: ${first.message}`);
  t.match(first.message, /goes on: send the same query again/);

  // A client tries again, a second after each answer; the check has its time only across them. While
  // the answer is busy, no checker was killed and replaced: the first check is the one going on (before,
  // each try's check was stopped at its 503 and the next began from nothing). The starving ends after two
  // tries, as a load does: the check goes on and reaches its verdict before it is given up, however busy
  // the machine running the suite is (starved for longer on a loaded machine, it could not).
  const deadline = Date.now() + scaled(90_000);
  const answers: string[] = [];
  const replacements = new Set<number>();
  let last = first;
  while (last.kind === 'busy' && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    // Before it is given up (20 times its deadline: a loaded machine may starve it that long, check-watch.ts),
    // and not in the try that gets the verdict: its checker is replaced as the verdict is given.
    const seen = Date.now() - sentAt < 20 * BUDGET ? checkerPids().filter((pid) => !started.has(pid)) : [];
    last = await outcome(checker.check(HEAVY, 'acme', 'trigger', BUDGET));
    answers.push(last.kind);
    if (last.kind === 'busy') for (const pid of seen) replacements.add(pid);
    if (Date.now() - sentAt >= STARVED_FOR) stop();
  }
  stop();
  t.equal(last.kind, 'refused', `tried again, the query gets its verdict (answers: ${answers.join(', ')})`);
  t.equal(replacements.size, 0, 'the check that was starved went on (until its verdict, or given up)');
  t.match(last.message, new RegExp(`checking the query took longer than ${BUDGET} ms`));
  const again = await outcome(checker.check(HEAVY, 'acme', 'trigger', BUDGET));
  t.same(again, last, 'sent once more, the same verdict at once');
  const other = await untilNotBusy(() => outcome(checker.check(HEAVY, 'other', 'trigger', BUDGET)));
  t.equal(other.kind, 'refused', "another org's same SQL is its own check");
});

t.test('a check that gets no CPU at all is given up; the next try starts anew', async (t) => {
  const checker = new SqlChecker(MEMORY);
  t.teardown(() => checker.close());
  t.equal((await outcome(checker.check(LIGHT, 'acme', 'trigger', WARM_UP))).kind, 'checked', 'the checkers are started, acme attached');
  const frozen = checkerPids();
  t.teardown(() => signal(frozen, 'SIGCONT'));
  signal(frozen, 'SIGSTOP');
  const first = await outcome(checker.check(HEAVY, 'acme', 'trigger', 100));
  t.equal(first.kind, 'busy', first.message);
  // Past 20 times its deadline (2 s) it is given up: a try then waits for it no longer.
  const deadline = Date.now() + scaled(60_000);
  let last = first;
  while (!/given up/.test(last.message) && Date.now() < deadline) last = await outcome(checker.check(HEAVY, 'acme', 'trigger', 100));
  t.match(last.message, /given up/, 'the waiting try is told it was given up');
  signal(frozen, 'SIGCONT');
  const anew = await untilNotBusy(() => outcome(checker.check(HEAVY, 'acme', 'trigger', 100)));
  t.equal(anew.kind, 'refused', `a new check, on a quiet machine: its verdict (${anew.message})`);
});
