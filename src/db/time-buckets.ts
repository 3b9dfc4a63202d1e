/**
 * Counts over time for the charts of the admin API (events per type, quarantine, a flow's sends): a range
 * `[from, to)` cut into UTC-aligned buckets of a minute, an hour or a day. The query string names them
 * (`from`, `to`, `bucket`); without them the last 24 hours by the hour. At most MAX_BUCKETS buckets, so a
 * far `from` with a small bucket is a 400 that says what to ask instead, not an answer of millions of zeros.
 * The SQL groups by `epoch_ms(column) // bucketMs`; `seriesBy` lays the grouped rows out as one count per bucket.
 */
import { AppError } from '../core/errors.js';

export const BUCKETS = { minute: 60_000, hour: 3_600_000, day: 86_400_000 } as const;
export type BucketName = keyof typeof BUCKETS;
export const MAX_BUCKETS = 1500;
const DEFAULT_SPAN_MS = 86_400_000;

export interface TimeRange {
  fromMs: number;
  toMs: number;
  bucket: BucketName;
  bucketMs: number;
  /** The first bucket's number (`fromMs // bucketMs`), and how many buckets the range spans. */
  first: number;
  count: number;
}

/** The documented query of a chart's endpoint (OpenAPI). */
export const rangeQueryDoc = {
  from: { type: 'string', format: 'date-time', description: 'the first instant counted (default: 24 hours before `to`)' },
  to: { type: 'string', format: 'date-time', description: 'counted up to this instant, not included (default: now)' },
  bucket: {
    type: 'string',
    enum: Object.keys(BUCKETS),
    description: `the width of a bucket, aligned to UTC (default: minute up to 3 hours, hour up to 7 days, day beyond); at most ${MAX_BUCKETS} buckets`,
  },
} as const;

/** What Fastify checks: strings, one each (a repeated parameter arrives as an array, a 400). */
export const rangeQuerySchema = { from: { type: 'string' }, to: { type: 'string' }, bucket: { type: 'string' } } as const;

export interface RangeQuery {
  from?: string;
  to?: string;
  bucket?: string;
}

function instant(text: string, name: string): number {
  // Date.parse takes "1" or "March 7"; only ISO 8601 with a date is asked for.
  const ms = /^\d{4}-\d{2}-\d{2}/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms)) throw new AppError('invalid_request', `${name} must be an ISO 8601 date-time, e.g. 2026-01-01T00:00:00Z`);
  return ms;
}

export function timeRange(query: RangeQuery, now: number): TimeRange {
  const toMs = query.to === undefined ? now : instant(query.to, 'to');
  const fromMs = query.from === undefined ? toMs - DEFAULT_SPAN_MS : instant(query.from, 'from');
  if (fromMs >= toMs) throw new AppError('invalid_request', `from (${new Date(fromMs).toISOString()}) must be before to (${new Date(toMs).toISOString()})`);
  let bucket: BucketName;
  if (query.bucket === undefined) {
    const span = toMs - fromMs;
    bucket = span <= 3 * BUCKETS.hour ? 'minute' : span <= 7 * BUCKETS.day ? 'hour' : 'day';
  } else if (Object.hasOwn(BUCKETS, query.bucket)) {
    bucket = query.bucket as BucketName;
  } else {
    throw new AppError('invalid_request', `bucket must be one of ${Object.keys(BUCKETS).join(', ')}`);
  }
  const bucketMs = BUCKETS[bucket];
  const first = Math.floor(fromMs / bucketMs);
  const count = Math.ceil(toMs / bucketMs) - first;
  if (count > MAX_BUCKETS) {
    const wider = bucket === 'minute' ? 'bucket=hour, ' : bucket === 'hour' ? 'bucket=day, ' : '';
    throw new AppError('invalid_request', `${count} ${bucket}s from ${new Date(fromMs).toISOString()} to ${new Date(toMs).toISOString()}: at most ${MAX_BUCKETS}; ask for ${wider}or a shorter range`);
  }
  return { fromMs, toMs, bucket, bucketMs, first, count };
}

/** The answer's description of the range: its ends, the bucket, and each bucket's start. */
export function rangeAnswer(range: TimeRange) {
  return {
    range: { from: new Date(range.fromMs).toISOString(), to: new Date(range.toMs).toISOString() },
    bucket: range.bucket,
    times: Array.from({ length: range.count }, (_, i) => new Date((range.first + i) * range.bucketMs).toISOString()),
  };
}

export interface BucketCount {
  /** `epoch_ms(t) // bucketMs`, as DuckDB answers it. */
  bucket: bigint | number | null;
  n: bigint | number;
}

/** A count per bucket of the range (zero where no row is), and their sum. */
export interface CountSeries {
  total: number;
  counts: number[];
}

/** One series per key of the grouped rows, in the order the keys first come. */
export function seriesBy<R extends BucketCount, K>(range: TimeRange, rows: Iterable<R>, key: (row: R) => K): Map<K, CountSeries> {
  const out = new Map<K, CountSeries>();
  for (const row of rows) {
    const k = key(row);
    let series = out.get(k);
    if (!series) out.set(k, (series = { total: 0, counts: new Array<number>(range.count).fill(0) }));
    const i = row.bucket === null ? -1 : Number(row.bucket) - range.first;
    if (i < 0 || i >= range.count) continue;
    series.counts[i]! += Number(row.n);
    series.total += Number(row.n);
  }
  return out;
}

/** All the rows as one series. */
export function series(range: TimeRange, rows: Iterable<BucketCount>): CountSeries {
  return seriesBy(range, rows, () => true).get(true) ?? { total: 0, counts: new Array<number>(range.count).fill(0) };
}

export const rangeSchemaParts = {
  range: {
    type: 'object',
    additionalProperties: false,
    required: ['from', 'to'],
    properties: { from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' } },
  },
  bucket: { type: 'string', enum: Object.keys(BUCKETS) },
  times: { type: 'array', description: "each bucket's first instant (UTC); every `counts` array has one number per bucket", items: { type: 'string', format: 'date-time' } },
} as const;
