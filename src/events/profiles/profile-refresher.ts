/**
 * Coalesces profile refreshes: compaction batches only enqueue the contacts they touched, and one
 * refresh at a time recomputes what an org has queued. Under load many batches share one refresh, so
 * profile recomputation no longer sits inside each compaction transaction's critical path.
 *
 * Each org has its own line: its own queue and its own waiters, told as soon as its own refresh ends;
 * orgs due take turns round-robin, each refreshed once per round (dueAt). So an org whose contacts were
 * not refreshed in the last round waits for at most the one refresh in progress, never for another org's
 * queue or pause. With one queue for all, an org's flow decision and read-your-writes lookup waited for the
 * pause after every org's refreshes and for the other orgs' refreshes in the same round, and were told only
 * after the last (flow-fairness.test.ts: B's fold wait 0.5–1.2 s under A's load, 0.15 s with lines).
 */
import { StorageUnavailable } from '../../core/unavailable.js';
import type { ContactKey, ProfileMaterializer } from './profile-materializer.js';

/**
 * A round is the time the orgs' last refreshes took; an org's next refresh starts a round and a pause after
 * its last one started: at least MIN_INTERVAL_MS, PAUSE_PER_REFRESH times the round, never more than
 * MAX_PAUSE_MS. The refreshes of an org under load then hold DuckDB at most a quarter of the time, so
 * compaction keeps up; on an idle service the pause is MIN_INTERVAL_MS. The cap is for freshness: an event
 * waits for the pause and the refresh, so an uncapped pause made it 4× the refresh, and when refreshing the
 * contacts of a second of traffic took more than a quarter of a second (many distinct contacts, a loaded
 * machine) the queue grew until contacts repeated. Issue 37, 2 cores at load average 27-39, collect at
 * ~200-260 req/s over 20,000 contacts, alternated: event → profile p50 13.7, 9.4 s uncapped; 6.4, 9.0 s
 * capped (p99 20.6, 14.9 → 9.0, 14.0 s); the refresh's share of it 11.8, 7.3 → 3.0, 3.1 s, the commit's
 * rising 1.9, 2.1 → 3.4, 5.9 s.
 *
 * A line someone waits on (a flow decision at its fold barrier, a read-your-writes lookup: `awaited`) pauses
 * one round instead of three, so its refreshes may hold DuckDB about half the time; the pause still grows
 * with the round, and a line nobody waits on keeps three. Waiting out three rounds was most of a flow's
 * latency: a one-contact refresh takes ~50 ms here, so an org's event right after another waited ~150 ms
 * for its refresh, and beside another org's 60 flows (a round of ~90 ms) the capped 250 ms (2 cores,
 * 2026-12-01, the fair phase's timeline: B's commit at 373 ms, its refresh started at 568). Alternated over
 * two runs each: B's event → webhook p50 177–184 → 99–114 ms idle, 340–342 → 199 ms beside A's flows.
 * (Awaited lines due one round after their end, without the other lines' share: beside A's flows, whose
 * decisions always wait, p99 357–475 against 291–297 ms: A refreshed more often, B waited on the CPU.)
 *
 * A line whose last refresh carried fewer than LOAD_CONTACTS contacts pauses one round too: its org is not
 * under load (at collect's saturation a refresh carries hundreds to thousands), so there is little to
 * coalesce and little compaction to leave room for, and three rounds were only latency — for every lookup
 * that polls, on this process or another. `npm run cluster`, 20 identify events/s, event → profile on
 * another process: p50 315 / 353 / 363 → 190 / 229 ms, p99 577 / 602 / 728 → 600 / 469 ms (2 cores,
 * 2026-12-01).
 *
 * A refresh that only moved profiles on in memory (a delivered send, events that change no more than a
 * first and last seen: profile-materializer.ts) read no database, so it does not start a pause: each of
 * an org's sends moved its contact on that way, and the org's next event waited out the 50 ms after it
 * (B's fold wait ~40 ms of its ~50 in the fair phase's timeline, 2026-12-02).
 */
const MIN_INTERVAL_MS = 50;
const PAUSE_PER_REFRESH = 3;
const SHORT_PAUSE_PER_REFRESH = 1;
const MAX_PAUSE_MS = 250;
const LOAD_CONTACTS = 100;

/** The pause after a refresh, given the round (every line's last refresh) and whether it is the short one. */
export function pauseAfter(roundMs: number, short: boolean): number {
  return Math.min(MAX_PAUSE_MS, Math.max(MIN_INTERVAL_MS, (short ? SHORT_PAUSE_PER_REFRESH : PAUSE_PER_REFRESH) * roundMs));
}

/**
 * While compaction works through a backlog, refreshes run at most this often: profiles are stale until
 * the backlog is drained anyway, and DuckDB's time goes to draining it (a 300,000-event drain: 31k
 * events/s without refreshes, 25k with refreshes paced as above, 15k with back-to-back refreshes).
 */
const BACKLOG_INTERVAL_MS = 5_000;
/**
 * A refresh the storage process could not make (it ended under it, or is restarting) is made again, its
 * waiters told only then: told at once, a read-your-writes lookup answered from profiles without its event
 * (a 404 for a new contact), and the contacts stayed stale until their next event. Each try waits for the
 * new process up to the storage client's call wait (10 s), so this many tries outlast any restart.
 */
const TRIES_WHILE_STORAGE_RESTARTS = 6;

/** One org's refreshes. */
interface Line {
  org: string;
  queued: ContactKey[];
  /** Told once the contacts queued so far are in the serving index. */
  waiting: Array<() => void>;
  /** Told once the refresh in progress ends (undefined: none is). */
  inFlight: Array<() => void> | undefined;
  lastEnded: number;
  lastTook: number;
  /** Contacts the last refresh carried. */
  lastSize: number;
  /** When it was last given a refresh (a count of grants), or, for a line new since, just before the last grant. */
  served: number;
  /** Tries in a row that found the storage process away. */
  away: number;
  /** Someone waits for the contacts queued (whenRefreshed with `awaited`): the shorter pause. */
  awaited: boolean;
}

export class ProfileRefresher {
  private readonly lines = new Map<string, Line>();
  private running: Promise<void> | undefined;
  private grants = 0;
  /** As told by the latest enqueue. */
  private backlog = false;
  /** Ends the current wait early when a due time may have moved closer. */
  private wake: (() => void) | undefined;

  constructor(
    private readonly materializer: ProfileMaterializer,
    private readonly onError: (error: unknown) => void,
    private readonly backlogIntervalMs = BACKLOG_INTERVAL_MS,
  ) {}

  /**
   * `backlog`: the compaction batch that touched these contacts was read from a backlog. `refreshed`:
   * called once they are in the serving index (at once when there are none), whether or not the refresh
   * succeeded (a failed one is logged; the next touch refreshes them again).
   */
  enqueue(keys: ContactKey[], options: { backlog?: boolean; refreshed?: () => void } = {}): void {
    const lines = new Set<Line>();
    for (const key of keys) {
      const line = this.line(key.org);
      line.queued.push(key);
      lines.add(line);
    }
    if (options.refreshed) {
      const refreshed = options.refreshed;
      let left = lines.size;
      if (left === 0) refreshed();
      for (const line of lines) line.waiting.push(() => --left === 0 && refreshed());
    }
    this.backlog = options.backlog ?? false;
    // A new line, or the backlog's end, may make a refresh due sooner than the one waited for.
    this.wake?.();
    if (lines.size > 0) this.running ??= this.drain();
  }

  /**
   * Resolves once the org's contacts enqueued so far are in the serving index (an org's refreshes are
   * done in order, so those enqueued before them too), later ones not waited for (unlike `settled`, which
   * under steady traffic may not resolve while refreshes keep coming). `awaited`: a decision or a reader
   * waits on it (not bookkeeping): the org's next refresh comes after the shorter pause.
   */
  whenRefreshed(org: string, options: { awaited?: boolean } = {}): Promise<void> {
    const line = this.lines.get(org);
    const waiters = line && (line.queued.length > 0 ? line.waiting : line.inFlight);
    if (!waiters) return Promise.resolve();
    if (options.awaited && line && waiters === line.waiting && !line.awaited) {
      line.awaited = true;
      // Its refresh may now be due sooner than the one waited for.
      this.wake?.();
    }
    return new Promise((resolve) => waiters.push(resolve));
  }

  /** Resolves when everything enqueued so far is in the serving index. */
  async settled(): Promise<void> {
    while (this.running) await this.running;
  }

  /**
   * Refreshes until no line has contacts queued. `running` is cleared in the same step as the last look at
   * the lines, with no await between: an enqueue after it starts a new run. (Cleared a microtask later, an
   * enqueue in between saw a run still going, and its contacts waited for the next enqueue.)
   */
  private async drain(): Promise<void> {
    try {
      for (let next = this.next(); next; next = this.next()) {
        if (next.dueAt > performance.now()) {
          await this.until(next.dueAt);
          continue;
        }
        await this.refresh(next.line);
      }
    } finally {
      this.running = undefined;
    }
  }

  /** One refresh of the line's queued contacts; made again (waiters kept) while the storage process is away. */
  private async refresh(line: Line): Promise<void> {
    const keys = line.queued;
    const waiting = (line.inFlight = line.waiting);
    const awaited = line.awaited;
    line.queued = [];
    line.waiting = [];
    line.awaited = false;
    line.served = ++this.grants;
    const started = performance.now();
    let away = false;
    let read = true;
    try {
      read = (await this.materializer.refresh(keys)) !== false;
    } catch (error) {
      away = error instanceof StorageUnavailable;
      if (!away) this.onError(error);
    }
    line.inFlight = undefined;
    // One that only moved profiles on in memory held no database: the next is not paced by it (see the top).
    if (read) {
      line.lastEnded = performance.now();
      line.lastTook = line.lastEnded - started;
      line.lastSize = keys.length;
    }
    if (away && ++line.away < TRIES_WHILE_STORAGE_RESTARTS) {
      line.queued = [...keys, ...line.queued];
      line.waiting = [...waiting, ...line.waiting];
      line.awaited ||= awaited;
      return;
    }
    if (away) this.onError(new StorageUnavailable(`profiles of ${keys.length} contacts not refreshed after ${line.away} tries`));
    line.away = 0;
    for (const refreshed of waiting) refreshed();
  }

  /**
   * The line to refresh next: of those with contacts queued, the one due soonest, and of those due now the
   * one served longest ago. Forgets lines with nothing queued whose pause is over (a new one starts at once).
   */
  private next(): { line: Line; dueAt: number } | undefined {
    const now = performance.now();
    let round = 0;
    for (const line of this.lines.values()) round += line.lastTook;
    let next: { line: Line; dueAt: number } | undefined;
    for (const line of this.lines.values()) {
      const dueAt = this.dueAt(line, round);
      if (line.queued.length === 0) {
        if (!line.inFlight && dueAt <= now) this.lines.delete(line.org);
        continue;
      }
      const sooner = !next || Math.max(dueAt, now) < Math.max(next.dueAt, now) || (dueAt <= now && next.dueAt <= now && line.served < next.line.served);
      if (sooner) next = { line, dueAt };
    }
    return next;
  }

  /**
   * One refresh of a line per round: the time every line's last refresh took (`round`) and the pause after it
   * (3× that, or 1× when awaited or the last refresh was small; 50–250 ms), from when the line's last refresh
   * started. With one org: its pause after its refresh. With many busy orgs: each refreshed once per round,
   * as many contacts coalesced as when one queue served them all, so no more refreshes (CPU) than then. An
   * org not refreshed for a round is due at once.
   */
  private dueAt(line: Line, round: number): number {
    const pause = pauseAfter(round, line.awaited || line.lastSize < LOAD_CONTACTS);
    // The other lines' share of the round is bounded like the pause: a refresh that waited out a storage
    // restart (up to 10 s) must not hold every other org's next refresh, nor `settled`, that long.
    const others = Math.min(round - line.lastTook, MAX_PAUSE_MS);
    return line.lastEnded + others + (this.backlog ? Math.max(pause, this.backlogIntervalMs) : pause);
  }

  private async until(at: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, at - performance.now());
      this.wake = () => {
        clearTimeout(timer);
        resolve();
      };
    });
    this.wake = undefined;
  }

  private line(org: string): Line {
    let line = this.lines.get(org);
    // As in org-turns.ts: a new line waits behind the lines waiting since before the last grant, not before them all.
    if (!line) {
      line = { org, queued: [], waiting: [], inFlight: undefined, lastEnded: Number.NEGATIVE_INFINITY, lastTook: 0, lastSize: 0, served: this.grants - 0.5, away: 0, awaited: false };
      this.lines.set(org, line);
    }
    return line;
  }
}
