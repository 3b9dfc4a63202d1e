/**
 * The orgs' turns (issue 37, finding 5). Every piece of flow work on an org's database — one flow run,
 * one pass over its step entries, one release of deferred sends, one scheduled start or chunk, an
 * erasure's deletions — runs in a turn of that org:
 * - never two turns of one org at once: they decide against the same send keys, caps and cursors
 *   (trigger-runs.ts says why a send key is then never decided twice);
 * - at most `atOnce` orgs at once (TURNS_AT_ONCE), and a free turn goes to the org with work waiting
 *   that was served longest ago (an org that had none counts as served just before the last turn given). So orgs with work take turns round-robin however
 *   much each has queued: one org's 60 due flows wait for each other, and another org's one flow waits
 *   for no more than the turns already running (none while a turn is free).
 * Within an org, work runs in the order it was asked for. Work that asks for a turn of its own org while
 * in one waits for itself: no caller does.
 */
import { Fifo } from '../../../core/fifo.js';

/**
 * Orgs whose flow work runs at once. Each holds its org's database in use: with ORG_DATABASES_MAX_OPEN
 * at 16 (its default), 4 leave room for compaction, lookups and the admin API. More would not run faster
 * on a 2-core machine: a turn's work is mostly DuckDB and the renderer's thread. With 4, an org waits for
 * another's turn only when four other orgs are busy at that moment.
 */
export const TURNS_AT_ONCE = 4;

interface Line {
  org: string;
  running: boolean;
  /** When it was last given a turn (a count of grants), or, for a line new since, just before the last grant. */
  served: number;
  waiting: Fifo<() => Promise<void>>;
}

export class OrgTurns {
  private readonly lines = new Map<string, Line>();
  private running = 0;
  private grants = 0;

  constructor(private readonly atOnce: number = TURNS_AT_ONCE) {}

  /** Runs `work` in a turn of `org`: when no other work of the org runs and it is the org's turn. */
  run<T>(org: string, work: () => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.line(org).waiting.push(async () => {
        try {
          resolve(await work());
        } catch (error) {
          reject(error);
        }
      });
      this.fill();
    });
  }

  /** Resolves when the org's work asked for so far has ended (the org was deleted: its last turns end). */
  settled(org: string): Promise<void> {
    return this.lines.has(org) ? this.run(org, () => Promise.resolve()) : Promise.resolve();
  }

  /** Orgs in a turn now, and orgs waiting for one (tests, metrics). */
  get load(): { running: number; waiting: number } {
    let waiting = 0;
    for (const line of this.lines.values()) if (!line.running && line.waiting.length > 0) waiting++;
    return { running: this.running, waiting };
  }

  private fill(): void {
    while (this.running < this.atOnce) {
      let line: Line | undefined;
      for (const candidate of this.lines.values()) {
        if (candidate.running || candidate.waiting.length === 0) continue;
        if (!line || candidate.served < line.served) line = candidate;
      }
      if (!line) return;
      const work = line.waiting.shift()!;
      line.running = true;
      line.served = ++this.grants;
      this.running++;
      void work().finally(() => {
        line.running = false;
        this.running--;
        if (line.waiting.length === 0) this.lines.delete(line.org);
        this.fill();
      });
    }
  }

  private line(org: string): Line {
    let line = this.lines.get(org);
    // An org that had no work counts as served just before the last turn given: it waits behind the orgs
    // waiting since before that turn, and goes before the org given it, as a round-robin queue would have
    // it. (Counting it never served would let an org whose work comes one piece at a time, its line gone
    // between pieces, go first each time.)
    if (!line) this.lines.set(org, (line = { org, running: false, served: this.grants - 0.5, waiting: new Fifo() }));
    return line;
  }
}
