/**
 * `audiencectl events …` and `quarantine`: what the org has sent, what is held, what was refused.
 */
import { type Command, type Series, get, listed, orgPath, overTime, query } from './command.js';


function eventsActivityTable(answer: unknown): unknown {
  const a = answer as { range: unknown; bucket: string; times: string[]; types: Array<Series & { eventType: string }>; otherTypes: Series & { types: number }; stored: Series; quarantined: Series };
  const columns: Array<[string, number[]]> = [['stored', a.stored.counts], ['quarantined', a.quarantined.counts], ...a.types.map((t): [string, number[]] => [t.eventType, t.counts])];
  if (a.otherTypes.types > 0) columns.push([`${a.otherTypes.types} other types`, a.otherTypes.counts]);
  return { range: a.range, bucket: a.bucket, stored: a.stored.total, quarantined: a.quarantined.total, buckets: overTime(a.times, columns) };
}
export const EVENT_COMMANDS: Command[] = [
  {
    name: 'events types',
    args: ['<slug>'],
    options: ['env', 'limit', 'cursor'],
    operations: ['listEventTypes'],
    summary: 'the event types the org has sent: counts and when last seen',
    example: 'audiencectl events types acme',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/events/types${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'events samples',
    args: ['<slug>'],
    options: ['env', 'event-type', 'limit', 'cursor'],
    operations: ['listEventSamples'],
    summary: 'the latest events as stored, newest first',
    example: 'audiencectl events samples acme --event-type custom_booking_completed --limit 5',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/events/samples${query({ env: opts.env, eventType: opts['event-type'], limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'events activity',
    args: ['<slug>'],
    options: ['env', 'from', 'to', 'bucket'],
    operations: ['getEventActivity'],
    summary: 'events stored per type, and quarantined, per minute, hour or day (default: the last 24 h by the hour)',
    example: 'audiencectl events activity acme --bucket day --from 2026-01-01T00:00:00Z',
    run: get(([slug], { opts }) => `${orgPath(slug!)}/events/activity${query({ env: opts.env, from: opts.from, to: opts.to, bucket: opts.bucket })}`, eventsActivityTable),
  },
  {
    name: 'events pending',
    args: ['<slug>'],
    options: ['env', 'limit', 'cursor'],
    operations: ['listPendingEvents'],
    summary: 'accepted events held until an identify names their clientId, oldest first, with their age',
    example: 'audiencectl events pending acme',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/events/pending${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'quarantine',
    args: ['<slug>'],
    options: ['env', 'limit', 'cursor'],
    operations: ['listQuarantine'],
    summary: 'events refused after they were accepted, with the reason',
    example: 'audiencectl quarantine acme --limit 20',
    run: listed(([slug], { opts }) => `${orgPath(slug!)}/quarantine${query({ env: opts.env, limit: opts.limit, cursor: opts.cursor })}`),
  },
];
