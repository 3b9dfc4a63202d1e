/**
 * Each org's relations for trigger and segment SQL: the schema `<slug>` with the views event_triggers
 * and profiles (pipelines/org_relations.sql), and the unqualified names bound to them for one run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Sql } from '../db/sql.js';
import { pipelinesDir } from '../paths.js';

/** The relations trigger SQL may name, unqualified or as `<slug>.<name>`. */
export const ORG_RELATIONS = ['event_triggers', 'profiles'] as const;

/** DuckDB names a slug must not take: they would shadow a catalog or schema the service relies on. */
export const RESERVED_SCHEMA_NAMES = new Set(['main', 'temp', 'system', 'pg_catalog', 'information_schema', 'memory']);

const SLUG = /^[a-z][a-z0-9_]{1,39}$/;

let template: string | undefined;

function assertSlug(slug: string): void {
  // The slug becomes an identifier and a literal below; the org schema already restricts it, this
  // keeps the splice safe even if a caller skipped that validation.
  if (!SLUG.test(slug) || RESERVED_SCHEMA_NAMES.has(slug)) throw new Error(`unsafe org slug for relations: ${slug}`);
}

export async function ensureOrgRelations(connection: Sql, slug: string): Promise<void> {
  assertSlug(slug);
  template ??= readFileSync(join(pipelinesDir, 'org_relations.sql'), 'utf8');
  await connection.run(template.replaceAll('ORG_SLUG', slug));
}

/**
 * Points the unqualified names at one org's views for the statements that follow on this connection
 * (temporary views shadow main's). Call unbindOrgRelations afterwards, in a finally.
 */
export async function bindOrgRelations(connection: Sql, slug: string): Promise<void> {
  assertSlug(slug);
  for (const name of ORG_RELATIONS) {
    await connection.run(`CREATE OR REPLACE TEMP VIEW ${name} AS SELECT * FROM ${slug}.${name}`);
  }
}

export async function unbindOrgRelations(connection: Sql): Promise<void> {
  for (const name of ORG_RELATIONS) await connection.run(`DROP VIEW IF EXISTS temp.main.${name}`);
}
