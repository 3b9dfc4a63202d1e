/**
 * What one log read accounts for: every position it passed is a record it returned or a position it says
 * holds none (`LogReader.skipped`). A position it passed without either is a hole — the reader stepped
 * over records (as a release that overtook a segment read once made it do: 4,600 of 15,802 events lost
 * in one loaded run) — and the batch must not be committed: the compactor reads it again instead.
 * Released positions above the checkpoint held records no org had compacted: lost, and said so.
 */
import type { EmptyRange, StoredRecord } from '../log/types.js';

export type ReadAccount =
  | { kind: 'whole'; released: EmptyRange[] }
  | { kind: 'hole'; from: number; to: number; reason: string };

/** `from`: the reader's position before the read; `through`: after it. */
/** A read stepped over positions it neither returned nor explained: the batch is read again, never committed. */
export class ReadHole extends Error {
  override name = 'ReadHole';
  constructor({ from, to, reason }: Extract<ReadAccount, { kind: 'hole' }>) {
    super(`the log read positions ${from}..${to} ${reason}`);
  }
}

export function accountRead(from: number, records: readonly StoredRecord[], skipped: readonly EmptyRange[], through: number): ReadAccount {
  const spans = [...records.map((r) => ({ from: r.seq, to: r.seq })), ...skipped].sort((a, b) => a.from - b.from);
  let next = from + 1;
  for (const span of spans) {
    if (span.from > next) return { kind: 'hole', from: next, to: span.from - 1, reason: 'passed without a record or a reason' };
    if (span.from < next || span.to > through) return { kind: 'hole', from: span.from, to: span.to, reason: 'returned twice or past the position' };
    next = span.to + 1;
  }
  if (next <= through) return { kind: 'hole', from: next, to: through, reason: 'passed without a record or a reason' };
  return { kind: 'whole', released: skipped.filter((range) => range.kind === 'released') };
}

/** The part of released ranges above `held` (every org holds its records up to there): lost records. */
export function lostAbove(released: readonly EmptyRange[], held: number): Array<{ from: number; to: number }> {
  return released.filter((range) => range.to > held).map((range) => ({ from: Math.max(range.from, held + 1), to: range.to }));
}
