/**
 * A test app with only the roles a test needs, built by the same buildApp a process with those ROLES runs:
 * src/app.ts opens the event log only for the collector and storage roles, the org databases and
 * compaction only for the storage roles (compactor, flows), and the renderer worker, channels and trigger
 * polling only for flows. An admin or Audience API test on ROLES=api starts, creates an org and closes in
 * a third of the time the whole service takes (docs/testing.md), and fails loudly if it reaches for what
 * it did not start (TestApp.db and compacted() without a storage role).
 */
import type { Config } from '../../src/core/config.js';
import { type StartOptions, type TestApp, startTestApp } from './app.js';

export type Role = Config['roles'][number];

/** ROLES=api: the admin API (orgs, credentials, tokens), the Audience API, health and metrics. */
export const API_ONLY: readonly Role[] = ['api'];
/** Collect and the org and credential admin calls, without org databases. */
export const COLLECT_AND_API: readonly Role[] = ['collector', 'api'];

export function startRoleApp(t: Parameters<typeof startTestApp>[0], roles: readonly Role[], options: StartOptions = {}): Promise<TestApp> {
  return startTestApp(t, { ...options, config: { ...options.config, roles: [...roles] } });
}
