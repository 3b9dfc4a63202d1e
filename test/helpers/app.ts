/** Builds the real app on a fresh DATA_DIR (t.testdir) with a test admin key; closes it at teardown. */
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.js';
import { armHangReport, closeStarted } from './hang-report.js';
import { type Config, readConfig } from '../../src/core/config.js';
import { type Clock, createContext } from '../../src/core/context.js';
import type { Database } from '../../src/db/sql.js';

export const ADMIN_KEY = 'test-admin-key-0123456789abcdef';
const adminHeaders = { authorization: `Bearer ${ADMIN_KEY}` };

interface Tap {
  testdir(): string;
  teardown(fn: () => unknown): void;
}

export interface TestApp {
  app: FastifyInstance;
  dataDir: string;
  admin(method: 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE', url: string, body?: unknown): Promise<LightMyRequestResponse>;
  createOrg(slug: string, extra?: object): Promise<OrgCredentials>;
  collect(body: unknown): Promise<LightMyRequestResponse>;
  batch(body: unknown): Promise<LightMyRequestResponse>;
  /** One org's database (DATA_DIR/orgs/<org>.duckdb). */
  db(org?: string): Database;
  /** Waits until everything appended so far is compacted into DuckDB and its profiles refreshed. */
  compacted(): Promise<void>;
  /** GET /metrics as Prometheus scrapes it on PORT (with the admin key): the text. */
  metrics(): Promise<string>;
  close(): Promise<void>;
}

export interface OrgCredentials {
  staging: { partnerId: string; partnerSecret: string; writeKey: string };
  production: { partnerId: string; partnerSecret: string; writeKey: string };
}

/** Config for a test app whose org storage runs in a storage process, as in production. */
export const STORAGE_PROCESS = { storageProcess: 'child' } as const;

export interface StartOptions {
  clock?: Clock;
  natsUrl?: string;
  dataDir?: string;
  config?: Partial<Config>;
}

/** Per test, the apps to close before its appsDir folder is removed. */
const dirApps = new WeakMap<Tap, Array<() => Promise<void>>>();

/**
 * t.testdir() for a test that starts apps in it later (`dataDir: join(dir, …)`): tap runs teardowns in the
 * order they were registered, so the folder would be removed before those apps close, while one still
 * writes into it (ENOTEMPTY, then the file's timeout, in a CI run). The apps started with `t` close first.
 */
export function appsDir(t: Tap): string {
  const closers: Array<() => Promise<void>> = [];
  dirApps.set(t, closers);
  t.teardown(() => Promise.all(closers.map((close) => close())));
  return t.testdir();
}

/** The whole service (every role); startRoleApp (role-app.ts) starts only the roles a test needs. */
export async function startTestApp(t: Tap, options: StartOptions = {}): Promise<TestApp> {
  // Registered before t.testdir(): tap then closes the app before it removes the directory, so no
  // part of the service (the storage process) still writes into a directory being removed.
  let close = async (): Promise<void> => {};
  t.teardown(() => close());
  armHangReport();
  const dataDir = options.dataDir ?? t.testdir();
  const config: Config = {
    ...readConfig({}),
    port: 0,
    host: '127.0.0.1',
    dataDir,
    queriesDir: `${dataDir}/queries`,
    roles: ['collector', 'compactor', 'api', 'flows'],
    logLevel: 'silent',
    webhookAllowPrivate: true,
    adminKey: ADMIN_KEY,
    ...(options.natsUrl ? { natsUrl: options.natsUrl } : {}),
    // Org storage in this process: a storage process takes ~3 s to start under tsx, ~200 apps start in
    // the suite. Files about the process boundary, isolation and recovery ask for one (STORAGE_PROCESS);
    // a test clock always needs this mode (the storage process keeps system time).
    storageProcess: 'inline',
    ...options.config,
    ...(options.clock ? { storageProcess: 'inline' as const } : {}),
  };
  const app = await buildApp(config, createContext(options.clock ? { clock: options.clock } : {}));
  let closed = false;
  close = async () => {
    if (closed) return;
    closed = true;
    const ended = closeStarted('a test app');
    await app.close();
    ended();
  };
  dirApps.get(t)?.push(close);

  const post = (url: string, body: unknown) =>
    app.inject({ method: 'POST', url, headers: { 'content-type': 'application/json' }, payload: JSON.stringify(body) });

  const admin: TestApp['admin'] = (method, url, body) =>
    app.inject({
      method,
      url,
      headers: body === undefined ? adminHeaders : { ...adminHeaders, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
    });

  return {
    app,
    dataDir,
    admin,
    async createOrg(slug, extra = {}) {
      const res = await admin('POST', '/admin/v1/orgs', { slug, name: slug, ...extra });
      if (res.statusCode !== 201) throw new Error(`createOrg ${slug}: ${res.statusCode} ${res.body}`);
      return res.json().credentials as OrgCredentials;
    },
    db: (org = 'acme') => storageOf(app).orgs.org(org),
    collect: (body) => post('/http/v1/collect', body),
    batch: (body) => post('/http/v1/batch', body),
    async metrics() {
      const res = await app.inject({ url: '/metrics', headers: adminHeaders });
      if (res.statusCode !== 200) throw new Error(`/metrics: ${res.statusCode} ${res.body}`);
      return res.body;
    },
    async compacted() {
      await storageOf(app).compaction!.whenCompacted(await app.eventLog!.headSeq());
      await app.storageRole!.refresher.settled();
    },
    close,
  };
}

/** The org databases; a test app without a storage role (startRoleApp) has none, and says so. */
function storageOf(app: FastifyInstance): NonNullable<FastifyInstance['orgStorage']> {
  if (!app.orgStorage) throw new Error(`this test app has no org databases: ROLES ${app.config.roles.join(',')} has neither compactor nor flows`);
  return app.orgStorage;
}

export { waitFor } from './deadline.js';

/** A valid custom event for the partner, overridable per test. */
export function customEvent(
  cred: { partnerId: string; partnerSecret: string },
  overrides: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    partnerId: cred.partnerId,
    partnerSecret: cred.partnerSecret,
    clientId: 'client-1',
    sentAt: Date.now(),
    type: 'track',
    event: 'custom',
    properties: { eventName: 'booking_completed', properties: { city: 'Lisbon', nights: 3 } },
    traits: { email: 'Ada@Example.com' },
    ...overrides,
  };
}

/** A booking by the contact with this e-mail (its own client id), as the flow and privacy tests send it. */
export function book(
  h: TestApp,
  cred: { partnerId: string; partnerSecret: string },
  email: string,
  messageId: string,
  extra: Record<string, unknown> = {},
): Promise<LightMyRequestResponse> {
  return h.collect(customEvent(cred, { messageId, clientId: `c-${email}`, traits: { email }, ...extra }));
}

/** POSTs a contacts import (CSV or NDJSON, by content type) to the org, as the admin. */
export function importContacts(h: TestApp, contentType: string, payload: string, org = 'acme'): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method: 'POST',
    url: `/admin/v1/orgs/${org}/contacts/import`,
    headers: { ...adminHeaders, 'content-type': contentType },
    payload,
  });
}
