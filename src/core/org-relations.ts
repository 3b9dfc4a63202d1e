/**
 * What trigger and segment SQL of one org may name: the views event_triggers and profiles of the org's
 * own database file (pipelines/org_relations.sql), unqualified or as `<slug>.<name>` (the file's catalog).
 */

/** The relations trigger SQL may name, unqualified or as `<slug>.<name>`. */
export const ORG_RELATIONS = ['event_triggers', 'profiles'] as const;

/** DuckDB names a slug must not take: they would shadow a catalog or schema the service relies on. */
export const RESERVED_SCHEMA_NAMES = new Set(['main', 'temp', 'system', 'pg_catalog', 'information_schema', 'memory']);
