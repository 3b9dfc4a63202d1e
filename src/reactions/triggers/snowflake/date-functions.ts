/**
 * Snowflake's date and time functions in DuckDB. Units may be bare words (`DATEADD(day, …)`, which
 * DuckDB reads as a column) or strings. DATEDIFF counts unit boundaries crossed in both systems
 * (DuckDB's date_diff does too, except for weeks, which it counts as 7-day spans: both dates are
 * truncated to their Monday first). Day boundaries are those of the service's time zone (UTC).
 */
import { SqlRefused } from '../sql-tree.js';
import { formatted } from './conversions.js';
import { arity, type Handler, refuse } from './handler.js';
import { asNumber, asText, type Rewriter, type Typed, typed } from './kinds.js';
import { cast, fn, integer, integerOf, type Node, op, text, textOf, wordOf } from './nodes.js';

const UNIT_ALIASES: Record<string, string> = {
  year: 'year', years: 'year', y: 'year', yy: 'year', yyy: 'year', yyyy: 'year', yr: 'year', yrs: 'year',
  quarter: 'quarter', quarters: 'quarter', q: 'quarter', qtr: 'quarter', qtrs: 'quarter',
  month: 'month', months: 'month', mm: 'month', mon: 'month', mons: 'month',
  week: 'week', weeks: 'week', w: 'week', wk: 'week', weekofyear: 'week', woy: 'week', wy: 'week',
  day: 'day', days: 'day', d: 'day', dd: 'day', dayofmonth: 'day',
  hour: 'hour', hours: 'hour', h: 'hour', hh: 'hour', hr: 'hour', hrs: 'hour',
  minute: 'minute', minutes: 'minute', m: 'minute', mi: 'minute', min: 'minute', mins: 'minute',
  second: 'second', seconds: 'second', s: 'second', sec: 'second', secs: 'second',
  millisecond: 'millisecond', milliseconds: 'millisecond', ms: 'millisecond', msec: 'millisecond',
  microsecond: 'microsecond', microseconds: 'microsecond', us: 'microsecond', usec: 'microsecond',
};
const INTERVALS: Record<string, [string, 'INTEGER' | 'BIGINT']> = {
  year: ['to_years', 'INTEGER'], month: ['to_months', 'INTEGER'], week: ['to_weeks', 'INTEGER'], day: ['to_days', 'INTEGER'],
  hour: ['to_hours', 'BIGINT'], minute: ['to_minutes', 'BIGINT'], second: ['to_seconds', 'BIGINT'],
  millisecond: ['to_milliseconds', 'BIGINT'], microsecond: ['to_microseconds', 'BIGINT'],
};

function unitOf(name: string, node: Node | undefined): string {
  const written = wordOf(node) ?? textOf(node)?.toLowerCase();
  const unit = written === undefined ? undefined : UNIT_ALIASES[written];
  if (!unit) {
    throw new SqlRefused(`${name.toUpperCase()}: the unit ${written ?? 'given'} is not translated: use year, quarter, month, week, day, hour, minute, second, millisecond or microsecond`);
  }
  return unit;
}

/** A date or time argument: a string or a variant is cast as Snowflake does implicitly. */
export function temporal(r: Rewriter, node: Node): Node {
  const t = r.expr(node);
  return t.kind === 'json' || t.kind === 'text' ? cast(asText(t).node, 'TIMESTAMP') : t.node;
}

function interval(unit: string, amount: Typed): Node {
  const [name, type] = unit === 'quarter' ? INTERVALS.month! : INTERVALS[unit]!;
  const n = integerOf(amount.node) !== undefined ? amount.node : cast(fn('trunc', cast(asNumber(amount).node, 'DOUBLE')), type);
  return fn(name, unit === 'quarter' ? op('*', n, integer(3)) : n);
}

const dateadd: Handler = (args, r) => {
  arity('DATEADD', args, 3, 3, 'DATEADD(day, -7, CURRENT_TIMESTAMP())');
  const unit = unitOf('DATEADD', args[0]);
  return typed(op('+', temporal(r, args[2]!), interval(unit, r.expr(args[1]!))), 'other');
};

const datediff: Handler = (args, r) => {
  arity('DATEDIFF', args, 3, 3, 'DATEDIFF(day, start, end)');
  const unit = unitOf('DATEDIFF', args[0]);
  let [start, end] = [temporal(r, args[1]!), temporal(r, args[2]!)];
  if (unit === 'week') [start, end] = [fn('date_trunc', text('week'), start), fn('date_trunc', text('week'), end)];
  return typed(fn('date_diff', text(unit), start, end), 'number');
};

const withUnit = (name: string, duck: string): Handler => (args, r) => {
  arity(name, args, 2);
  return typed(fn(duck, text(unitOf(name, args[0])), temporal(r, args[1]!)), duck === 'date_trunc' ? 'other' : 'number');
};

/** CONVERT_TIMEZONE(target, ts) and CONVERT_TIMEZONE(source, target, ts_ntz): the wall-clock time in target. */
const convertTimezone: Handler = (args, r) => {
  arity('CONVERT_TIMEZONE', args, 2, 3, "CONVERT_TIMEZONE('UTC', 'America/New_York', ts)");
  const zones = args.slice(0, -1).map((a) => asText(r.expr(a)).node);
  const value = temporal(r, args[args.length - 1]!);
  if (zones.length === 1) return typed(fn('timezone', zones[0]!, cast(value, 'TIMESTAMP WITH TIME ZONE')), 'other');
  return typed(fn('timezone', zones[1]!, fn('timezone', zones[0]!, cast(value, 'TIMESTAMP'))), 'other');
};

const now = (name: string, node: () => Node): Handler => (args) => {
  arity(name, args, 0);
  return typed(node(), 'other');
};

const toDate = (tryCast: boolean): Handler => (args, r) => {
  arity(tryCast ? 'TRY_TO_DATE' : 'TO_DATE', args, 1, 2, "TO_DATE(x) or TO_DATE(x, 'YYYY-MM-DD')");
  if (args.length === 2) return typed(cast(formatted(r, args, 'strptime', tryCast), 'DATE'), 'other');
  const t = r.expr(args[0]!);
  const value = t.kind === 'json' || t.kind === 'text' ? cast(asText(t).node, 'TIMESTAMP', tryCast) : t.node;
  return typed(cast(value, 'DATE', tryCast), 'other');
};

const toTimestamp = (name: string, to: 'TIMESTAMP' | 'TIMESTAMP WITH TIME ZONE', tryCast: boolean): Handler => (args, r) => {
  arity(name, args, 1, 2, `${name}(x) or ${name}(x, 'YYYY-MM-DD HH24:MI:SS')`);
  if (args.length === 2) return typed(cast(formatted(r, args, 'strptime', tryCast), to), 'other');
  const t = r.expr(args[0]!);
  // A number is seconds since the epoch, as in Snowflake.
  if (t.kind === 'number') return typed(cast(fn('to_timestamp', cast(t.node, 'DOUBLE')), to, tryCast), 'other');
  return typed(cast(asText(t).node, to, tryCast), 'other');
};

const shortName = (duck: string): Handler => (args, r) => {
  arity(duck.toUpperCase(), args, 1);
  return typed(fn('left', fn(duck, temporal(r, args[0]!)), integer(3)), 'text');
};

export const DATE_FUNCTIONS: Record<string, Handler> = {
  dateadd, timeadd: dateadd, timestampadd: dateadd,
  datediff, timediff: datediff, timestampdiff: datediff,
  date_trunc: withUnit('DATE_TRUNC', 'date_trunc'),
  date_part: withUnit('DATE_PART', 'date_part'),
  datepart: withUnit('DATE_PART', 'date_part'),
  convert_timezone: convertTimezone,
  current_timestamp: now('CURRENT_TIMESTAMP', () => fn('now')),
  localtimestamp: now('LOCALTIMESTAMP', () => fn('now')),
  systimestamp: now('SYSTIMESTAMP', () => fn('now')),
  sysdate: now('SYSDATE', () => fn('timezone', text('UTC'), fn('now'))),
  getdate: now('GETDATE', () => fn('timezone', text('UTC'), fn('now'))),
  current_date: now('CURRENT_DATE', () => fn('current_date')),
  to_date: toDate(false), date: toDate(false), try_to_date: toDate(true),
  to_timestamp: toTimestamp('TO_TIMESTAMP', 'TIMESTAMP', false),
  to_timestamp_ntz: toTimestamp('TO_TIMESTAMP_NTZ', 'TIMESTAMP', false),
  try_to_timestamp: toTimestamp('TRY_TO_TIMESTAMP', 'TIMESTAMP', true),
  try_to_timestamp_ntz: toTimestamp('TRY_TO_TIMESTAMP_NTZ', 'TIMESTAMP', true),
  to_timestamp_ltz: toTimestamp('TO_TIMESTAMP_LTZ', 'TIMESTAMP WITH TIME ZONE', false),
  to_timestamp_tz: toTimestamp('TO_TIMESTAMP_TZ', 'TIMESTAMP WITH TIME ZONE', false),
  dayname: shortName('dayname'),
  monthname: shortName('monthname'),
  dayofweekiso: (args, r) => (arity('DAYOFWEEKISO', args, 1), typed(fn('isodow', temporal(r, args[0]!)), 'number')),
  date_from_parts: (args, r) => (arity('DATE_FROM_PARTS', args, 3), typed(fn('make_date', ...args.map((a) => cast(asNumber(r.expr(a)).node, 'BIGINT'))), 'other')),
  add_months: () => refuse('ADD_MONTHS', 'write DATEADD(month, n, d) (the last day of a month is not kept as the last day)'),
};
