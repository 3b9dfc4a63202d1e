/**
 * The embedded log's layout changes on their way to the storage process, a few appends per message under
 * load. Each durable write is one change; at collect's saturation that is thousands a second, and each
 * message costs both processes a serialization (~11 % of the storage process's CPU under collect went to
 * receiving them). A change is sent at once when none was sent in the last `windowMs`; otherwise the
 * appends gather (offsets in order, the last end) and go together when the window ends, so the tail
 * learns of a write at most `windowMs` late. A release is sent after the appends before it.
 */
import type { LayoutChange } from './segments.js';

type Appended = Extract<LayoutChange, { kind: 'appended' }>;

export class LayoutRelay {
  private pending: Appended | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastSent = -Infinity;

  constructor(
    private readonly send: (change: LayoutChange) => void,
    private readonly windowMs = 1,
    private readonly now: () => number = () => performance.now(),
  ) {}

  push(change: LayoutChange): void {
    if (change.kind === 'released') {
      this.flush();
      this.send(change);
      return;
    }
    const pending = this.pending;
    if (pending?.firstSeq === change.firstSeq) {
      for (const offset of change.offsets) pending.offsets.push(offset);
      pending.end = change.end;
    } else {
      this.flush();
      this.pending = { ...change, offsets: [...change.offsets] };
    }
    if (this.timer) return;
    const since = this.now() - this.lastSent;
    if (since >= this.windowMs) this.flush();
    else this.timer = setTimeout(() => this.flush(), this.windowMs - since).unref();
  }

  /** Sends what gathered now. */
  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const pending = this.pending;
    if (!pending) return;
    this.pending = undefined;
    this.lastSent = this.now();
    this.send(pending);
  }

  /** Forgets what gathered: a process starting now is handed the whole layout, these appends with it. */
  discard(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.pending = undefined;
  }
}
