/**
 * One channel's delivery slots. The dispatcher holds a slot from a send's request until its outcome is
 * recorded, so at any instant at most `perOrg` of an org's sends on the channel (and `size` of all orgs')
 * are sent but not recorded: all a kill -9 can make the next start send again.
 *
 * Orgs share the slots: a free slot goes to the org that holds the fewest (the one served longest ago
 * among equals), and no org holds more than `perOrg`, fewer than `size`: so an org whose receiver hangs to
 * its timeout, or whose database is slow to record, fills its share only, and another org's send finds a
 * free slot at once rather than waiting for one of the slow org's to end (issue 37: behind a receiver that
 * answered after 2 s, another org's messages took ~1.2 s instead of 0.2 s while every slot was held).
 * Within an org, sends coming back from a retry wait go before new ones.
 */
import { Fifo } from '../../../core/fifo.js';

/** A send waiting for a slot: started when it gets one, cancelled when its org or the service goes. */
export interface Waiter {
  start(): void;
  cancel(): void;
}

interface Line {
  held: number;
  /** When it was last given a slot (a count of grants; 0: never). */
  served: number;
  retries: Fifo<Waiter>;
  fresh: Fifo<Waiter>;
}

export class DeliverySlots {
  /** Orgs holding a slot or waiting for one. */
  private readonly lines = new Map<string, Line>();
  private used = 0;
  private grants = 0;

  constructor(
    private readonly size: number,
    private readonly perOrg: number = size,
  ) {}

  /** Queues a new send of `org`. */
  wait(org: string, waiter: Waiter): void {
    this.line(org).fresh.push(waiter);
    this.fill();
  }

  /** A send back from its retry wait: resolves true with a slot held, false if cancelled meanwhile. */
  reacquire(org: string): Promise<boolean> {
    return new Promise((resolve) => {
      this.line(org).retries.push({ start: () => resolve(true), cancel: () => resolve(false) });
      this.fill();
    });
  }

  release(org: string): void {
    const line = this.lines.get(org);
    if (!line || line.held === 0) return;
    line.held--;
    this.used--;
    this.forgetIfIdle(org, line);
    this.fill();
  }

  /** Cancels what waits for a slot: one org's sends (deleted org), or every org's (shutdown). */
  cancel(org?: string): void {
    for (const [slug, line] of [...this.lines]) {
      if (org !== undefined && slug !== org) continue;
      for (const waiter of [...line.retries.drain(), ...line.fresh.drain()]) waiter.cancel();
      this.forgetIfIdle(slug, line);
    }
  }

  private fill(): void {
    while (this.used < this.size) {
      let next: Line | undefined;
      for (const line of this.lines.values()) {
        if (line.retries.length + line.fresh.length === 0 || line.held >= this.perOrg) continue;
        if (!next || line.held < next.held || (line.held === next.held && line.served < next.served)) next = line;
      }
      if (!next) return;
      const waiter = (next.retries.length > 0 ? next.retries : next.fresh).shift()!;
      next.held++;
      next.served = ++this.grants;
      this.used++;
      waiter.start();
    }
  }

  private line(org: string): Line {
    let line = this.lines.get(org);
    if (!line) this.lines.set(org, (line = { held: 0, served: 0, retries: new Fifo(), fresh: new Fifo() }));
    return line;
  }

  private forgetIfIdle(org: string, line: Line): void {
    if (line.held === 0 && line.retries.length === 0 && line.fresh.length === 0) this.lines.delete(org);
  }
}
