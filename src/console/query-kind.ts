/**
 * Triggers, segments and traits alike: named SQL queries with versions. Their status as the list and the
 * editor show it, and the SQL a new one starts from.
 */

export type QueryKind = 'triggers' | 'segments' | 'traits';

export const NOUN: Record<QueryKind, string> = { triggers: 'trigger', segments: 'segment', traits: 'trait' };

/** What a new one starts from (a trigger: from an event type, referenceQuery). */
export const STARTER_SQL: Record<Exclude<QueryKind, 'triggers'>, string> = {
  segments: "SELECT email_address AS email FROM profiles WHERE first_name = 'Ada'",
  traits: "SELECT identity AS email, count(*) AS value\nFROM event_triggers\nWHERE event_type = 'custom_booking_completed'\nGROUP BY identity",
};

/** A trait's values as last computed (GET …/traits). */
export interface TraitValues {
  version: number | null;
  computedAt: string | null;
  contacts: number;
  tookMs: number | null;
  error: string | null;
}

export interface QueryStatus {
  name: string;
  status: 'live' | 'live_previous_version' | 'invalid' | 'file_refused';
  liveVersion: number | null;
  liveHash: string | null;
  /** null: the file was refused before any version was recorded. */
  latestVersion: number | null;
  error: string | null;
  committedAt: string | null;
  values?: TraitValues | null;
}

export const STATUS_TEXT: Record<QueryStatus['status'], string> = {
  live: 'live',
  live_previous_version: 'latest refused, previous live',
  invalid: 'refused',
  file_refused: 'file not read',
};

/** What trigger SQL reads (pipelines/org_relations.sql). */
export const EVENT_TRIGGER_COLUMNS: Array<[string, string]> = [
  ['identity', "the contact's e-mail"],
  ['identity_type', "'email'"],
  ['ts', 'when the event became visible (the window is on this)'],
  ['event_type', 'e.g. custom_booking_completed'],
  ['event_id', 'the messageId'],
  ['event_raw', 'the event as received (JSON)'],
  ['properties', 'its properties (JSON)'],
  ['event_time', 'timestamp, else received time'],
  ['received_at', 'server time of receipt'],
  ['user_id', 'userId when sent'],
  ['client_id', 'clientId'],
];

export function referenceQuery(eventType: string): string {
  return `SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers
WHERE event_type = '${eventType.replaceAll("'", "''")}'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}`;
}

/** custom_booking_completed → booking_completed: a name the SQL file can have. */
export function nameFor(eventType: string): string {
  const name = eventType.replace(/^custom_/, '').toLowerCase().replace(/[^a-z0-9_]/g, '_').replace(/^[^a-z]+/, '');
  return (name || 'trigger').slice(0, 64);
}
