/**
 * SPEC 4.4: the same (org, environment, messageId) within 24 h is stored once.
 * Held in memory (seeded from DuckDB at start) so compaction needs no index probe per event.
 * Memory is ~150 bytes per event of the last 24 h.
 */
export const DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000;

export function dedupeKey(org: string, environment: string, messageId: string): string {
  return `${org}\u0000${environment}\u0000${messageId}`;
}

export class DedupeWindow {
  /** Insertion order ≈ receipt order, so pruning walks from the front. */
  private readonly seenAt = new Map<string, number>();

  /** True when the key was seen within 24 h before `receivedAt`; records it otherwise. */
  checkAndRecord(key: string, receivedAt: number): boolean {
    const previous = this.seenAt.get(key);
    if (previous !== undefined) {
      if (receivedAt - previous < DEDUPE_WINDOW_MS) return true;
      // Seen longer ago: moved to the end, so the front stays the oldest.
      this.seenAt.delete(key);
    }
    this.seenAt.set(key, receivedAt);
    return false;
  }

  prune(now: number): void {
    for (const [key, at] of this.seenAt) {
      if (now - at < DEDUPE_WINDOW_MS) break;
      this.seenAt.delete(key);
    }
  }

  get size(): number {
    return this.seenAt.size;
  }
}
