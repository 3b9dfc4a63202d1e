/**
 * The embedded log's dedupe window: record id → seq for the last `capacity` records.
 * A ring of ids evicts the oldest in O(1); deleting from the front of a Map instead leaves holes that
 * make `keys().next()` slow at this size.
 */
export class RecentIds {
  private readonly seqs = new Map<string, number>();
  private readonly ring: (string | undefined)[];
  private next = 0;

  constructor(private readonly capacity: number) {
    this.ring = new Array<string | undefined>(capacity);
  }

  get(id: string): number | undefined {
    return this.seqs.get(id);
  }

  /** Remembers an id not currently known (ids in the ring are therefore unique). */
  add(id: string, seq: number): void {
    const evicted = this.ring[this.next];
    if (evicted !== undefined) this.seqs.delete(evicted);
    this.ring[this.next] = id;
    this.next = (this.next + 1) % this.capacity;
    this.seqs.set(id, seq);
  }
}
