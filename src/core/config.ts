/**
 * Reads the configuration from the environment once, validates it with schemas/config.schema.json,
 * and stops start-up with a message naming the variable when a value is wrong.
 * Nothing else in the service reads process.env.
 */
import type { Config } from '../generated/config.js';
import { accessSync, constants } from 'node:fs';
import ipaddr from 'ipaddr.js';
import { validatorFor } from './schemas.js';
import { type Shard, SINGLE_SHARD, parseShard } from './shard.js';

export type { Config };

const ALL_ROLES = ['collector', 'compactor', 'api', 'flows'] as const;

/** Environment variable behind each config member, for error messages. */
const variableOf: Record<keyof Config, string> = {
  port: 'PORT',
  host: 'HOST',
  dataDir: 'DATA_DIR',
  natsUrl: 'NATS_URL',
  adminKey: 'ADMIN_KEY',
  queriesDir: 'QUERIES_DIR',
  roles: 'ROLES',
  logLevel: 'LOG_LEVEL',
  smtpUrl: 'SMTP_URL',
  publicUrl: 'PUBLIC_URL',
  webhookAllowPrivate: 'WEBHOOK_ALLOW_PRIVATE',
  webhookSigningKey: 'WEBHOOK_SIGNING_KEY',
  webhookTimeoutMs: 'WEBHOOK_TIMEOUT_MS',
  webhookMaxAttempts: 'WEBHOOK_MAX_ATTEMPTS',
  webhookBackoffMs: 'WEBHOOK_BACKOFF_MS',
  triggerTimeoutMs: 'TRIGGER_TIMEOUT_MS',
  triggerMaxRows: 'TRIGGER_MAX_ROWS',
  duckdbMemoryLimit: 'DUCKDB_MEMORY_LIMIT',
  orgDatabasesMaxOpen: 'ORG_DATABASES_MAX_OPEN',
  orgDatabaseThreads: 'ORG_DATABASE_THREADS',
  orgDatabaseIdleMs: 'ORG_DATABASE_IDLE_MS',
  storageProcess: 'STORAGE_PROCESS',
  natsPublishTimeoutMs: 'NATS_PUBLISH_TIMEOUT_MS',
  natsStreamReplicas: 'NATS_STREAM_REPLICAS',
  shard: 'SHARD',
  httpHeadersTimeoutMs: 'HTTP_HEADERS_TIMEOUT_MS',
  httpRequestTimeoutMs: 'HTTP_REQUEST_TIMEOUT_MS',
  httpKeepAliveTimeoutMs: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  redisUrl: 'REDIS_URL',
  redisKeyPrefix: 'REDIS_KEY_PREFIX',
  trustProxy: 'TRUST_PROXY',
  metricsPort: 'METRICS_PORT',
  shutdownTimeoutMs: 'SHUTDOWN_TIMEOUT_MS',
  retentionEventsDays: 'RETENTION_EVENTS_DAYS',
  retentionEventsByEventTimeDays: 'RETENTION_EVENTS_BY_EVENT_TIME_DAYS',
  retentionQuarantineDays: 'RETENTION_QUARANTINE_DAYS',
  logSegmentMb: 'LOG_SEGMENT_MB',
  logRetentionHours: 'LOG_RETENTION_HOURS',
  retentionDecisionsDays: 'RETENTION_DECISIONS_DAYS',
  retentionSendsContentDays: 'RETENTION_SENDS_CONTENT_DAYS',
  natsStreamMaxAgeMs: 'NATS_STREAM_MAX_AGE',
  natsStreamMaxBytes: 'NATS_STREAM_MAX_BYTES',
  natsCreds: 'NATS_CREDS',
  natsUser: 'NATS_USER',
  natsPassword: 'NATS_PASSWORD',
  natsTlsCa: 'NATS_TLS_CA',
  natsTlsCert: 'NATS_TLS_CERT',
  natsTlsKey: 'NATS_TLS_KEY',
};

/** Every environment variable the service reads (deployment files are checked against it). */
export const CONFIG_VARIABLES: readonly string[] = Object.values(variableOf);

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

function integer(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name} must be an integer, got "${raw}"`);
  return Number(raw);
}

function boolean(name: string, raw: string | undefined, fallback: boolean): boolean {
  if (raw === undefined || raw === '') return fallback;
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function shard(raw: string | undefined): Shard {
  if (raw === undefined || raw === '') return SINGLE_SHARD;
  const parsed = parseShard(raw);
  if (!parsed) throw new ConfigError(`SHARD must be <i>/<n> with 0 <= i < n (e.g. 0/2), got "${raw}"`);
  return parsed;
}

/**
 * TRUST_PROXY: which peers may say, in X-Forwarded-For, whose request it is (the failed-auth limiter and
 * the logs then see the client's address). `true` trusts every peer (only when nothing but the load
 * balancer can reach the port); a list names the balancers' addresses or CIDRs. A hop count is refused:
 * it trusts whatever an attacker prepends once the path changes.
 */
function trustProxy(raw: string | undefined): boolean | string[] {
  if (raw === undefined || raw === '' || raw === 'false') return false;
  if (raw === 'true') return true;
  const entries = raw.split(',').map((entry) => entry.trim());
  for (const entry of entries) {
    const valid = entry.includes('/') ? ipaddr.isValidCIDR(entry) : ipaddr.isValid(entry);
    if (!valid || /^\d+$/.test(entry)) {
      throw new ConfigError(
        `TRUST_PROXY is invalid: "${entry}" is not an IP address or CIDR; use true, false, or a comma-separated list such as 10.0.0.0/8,192.168.1.7 (hop counts are not supported)`,
      );
    }
  }
  return entries;
}

const DURATION_UNITS_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** NATS_STREAM_MAX_AGE: `0` (kept until NATS_STREAM_MAX_BYTES) or a number with s, m, h or d, e.g. `7d`. */
function duration(name: string, raw: string | undefined, fallbackMs: number): number {
  if (raw === undefined || raw === '') return fallbackMs;
  if (raw === '0') return 0;
  const match = /^(\d+)([smhd])$/.exec(raw);
  if (!match) throw new ConfigError(`${name} is invalid: "${raw}" is not a duration; use a number with s, m, h or d (e.g. 7d, 72h), or 0 for no age limit`);
  return Number(match[1]) * DURATION_UNITS_MS[match[2]!]!;
}

const SIZE_UNITS: Record<string, number> = { '': 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

/** NATS_STREAM_MAX_BYTES: `-1` (no limit) or bytes, with an optional KB, MB, GB or TB. */
function size(name: string, raw: string | undefined, fallback: number): number {
  if (raw === undefined || raw === '') return fallback;
  if (raw === '-1') return -1;
  const match = /^(\d+)(KB|MB|GB|TB)?$/.exec(raw);
  if (!match) throw new ConfigError(`${name} is invalid: "${raw}" is not a size; use bytes or a number with KB, MB, GB or TB (e.g. 50GB), or -1 for no limit`);
  return Number(match[1]) * SIZE_UNITS[match[2] ?? '']!;
}

/** A file the service must read at start (credentials, certificates): refused at once when it cannot. */
function readableFile(name: string, raw: string | undefined): string | undefined {
  if (raw === undefined || raw === '') return undefined;
  try {
    accessSync(raw, constants.R_OK);
  } catch {
    throw new ConfigError(`${name} is invalid: cannot read the file ${raw}`);
  }
  return raw;
}

function optional(raw: string | undefined): string | undefined {
  return raw === undefined || raw === '' ? undefined : raw;
}

export function readConfig(env: NodeJS.ProcessEnv): Config {
  const candidate: Record<string, unknown> = {
    port: integer('PORT', env.PORT, 8080),
    host: env.HOST || '127.0.0.1',
    dataDir: env.DATA_DIR || './data',
    queriesDir: env.QUERIES_DIR || './queries',
    roles: env.ROLES ? env.ROLES.split(',').map((r) => r.trim()) : [...ALL_ROLES],
    logLevel: env.LOG_LEVEL || 'info',
    webhookAllowPrivate: boolean('WEBHOOK_ALLOW_PRIVATE', env.WEBHOOK_ALLOW_PRIVATE, false),
    webhookTimeoutMs: integer('WEBHOOK_TIMEOUT_MS', env.WEBHOOK_TIMEOUT_MS, 10_000),
    webhookMaxAttempts: integer('WEBHOOK_MAX_ATTEMPTS', env.WEBHOOK_MAX_ATTEMPTS, 6),
    webhookBackoffMs: integer('WEBHOOK_BACKOFF_MS', env.WEBHOOK_BACKOFF_MS, 1_000),
    triggerTimeoutMs: integer('TRIGGER_TIMEOUT_MS', env.TRIGGER_TIMEOUT_MS, 10_000),
    triggerMaxRows: integer('TRIGGER_MAX_ROWS', env.TRIGGER_MAX_ROWS, 100_000),
    duckdbMemoryLimit: env.DUCKDB_MEMORY_LIMIT || '4GB',
    orgDatabasesMaxOpen: integer('ORG_DATABASES_MAX_OPEN', env.ORG_DATABASES_MAX_OPEN, 16),
    orgDatabaseThreads: integer('ORG_DATABASE_THREADS', env.ORG_DATABASE_THREADS, 2),
    orgDatabaseIdleMs: integer('ORG_DATABASE_IDLE_MS', env.ORG_DATABASE_IDLE_MS, 60_000),
    storageProcess: env.STORAGE_PROCESS || 'child',
    natsPublishTimeoutMs: integer('NATS_PUBLISH_TIMEOUT_MS', env.NATS_PUBLISH_TIMEOUT_MS, 5_000),
    natsStreamReplicas: integer('NATS_STREAM_REPLICAS', env.NATS_STREAM_REPLICAS, 1),
    shard: shard(env.SHARD),
    // Slow-body clients (a byte now and then) hold a connection until the request timeout: 30 s still
    // lets a 500 KB batch arrive at ~17 KB/s. Headers come first and are small: 10 s.
    httpHeadersTimeoutMs: integer('HTTP_HEADERS_TIMEOUT_MS', env.HTTP_HEADERS_TIMEOUT_MS, 10_000),
    httpRequestTimeoutMs: integer('HTTP_REQUEST_TIMEOUT_MS', env.HTTP_REQUEST_TIMEOUT_MS, 30_000),
    // Fastify's own default: above the 60 s idle timeout of common load balancers, so the balancer closes
    // an idle connection first and never reuses one the service is closing.
    httpKeepAliveTimeoutMs: integer('HTTP_KEEP_ALIVE_TIMEOUT_MS', env.HTTP_KEEP_ALIVE_TIMEOUT_MS, 72_000),
    redisKeyPrefix: env.REDIS_KEY_PREFIX || 'audience',
    trustProxy: trustProxy(env.TRUST_PROXY),
    // Days; 0 keeps forever. docs/operations/retention.md says why these defaults.
    retentionEventsDays: integer('RETENTION_EVENTS_DAYS', env.RETENTION_EVENTS_DAYS, 365),
    retentionEventsByEventTimeDays: integer('RETENTION_EVENTS_BY_EVENT_TIME_DAYS', env.RETENTION_EVENTS_BY_EVENT_TIME_DAYS, 0),
    retentionQuarantineDays: integer('RETENTION_QUARANTINE_DAYS', env.RETENTION_QUARANTINE_DAYS, 30),
    retentionDecisionsDays: integer('RETENTION_DECISIONS_DAYS', env.RETENTION_DECISIONS_DAYS, 365),
    retentionSendsContentDays: integer('RETENTION_SENDS_CONTENT_DAYS', env.RETENTION_SENDS_CONTENT_DAYS, 90),
    logSegmentMb: integer('LOG_SEGMENT_MB', env.LOG_SEGMENT_MB, 64),
    logRetentionHours: integer('LOG_RETENTION_HOURS', env.LOG_RETENTION_HOURS, 24),
    // Below the 30 s a container runtime or systemd waits after SIGTERM before it kills.
    shutdownTimeoutMs: integer('SHUTDOWN_TIMEOUT_MS', env.SHUTDOWN_TIMEOUT_MS, 25_000),
  };
  if (env.STORAGE_THREAD !== undefined) throw new ConfigError('STORAGE_THREAD was replaced by STORAGE_PROCESS (child, the default, or inline); unset STORAGE_THREAD');
  candidate.natsStreamMaxAgeMs = duration('NATS_STREAM_MAX_AGE', env.NATS_STREAM_MAX_AGE, 7 * DURATION_UNITS_MS.d!);
  candidate.natsStreamMaxBytes = size('NATS_STREAM_MAX_BYTES', env.NATS_STREAM_MAX_BYTES, -1);
  const natsFiles = { natsCreds: 'NATS_CREDS', natsTlsCa: 'NATS_TLS_CA', natsTlsCert: 'NATS_TLS_CERT', natsTlsKey: 'NATS_TLS_KEY' } as const;
  for (const [member, variable] of Object.entries(natsFiles)) {
    const file = readableFile(variable, env[variable]);
    if (file) candidate[member] = file;
  }
  if (optional(env.NATS_USER)) candidate.natsUser = env.NATS_USER;
  if (optional(env.NATS_PASSWORD)) candidate.natsPassword = env.NATS_PASSWORD;
  if (optional(env.METRICS_PORT)) candidate.metricsPort = integer('METRICS_PORT', env.METRICS_PORT, 0);
  const natsUrl = optional(env.NATS_URL);
  if (natsUrl) candidate.natsUrl = natsUrl;
  const adminKey = optional(env.ADMIN_KEY);
  if (adminKey) candidate.adminKey = adminKey;
  const publicUrl = optional(env.PUBLIC_URL);
  if (publicUrl) candidate.publicUrl = publicUrl;
  const smtpUrl = optional(env.SMTP_URL);
  if (smtpUrl) candidate.smtpUrl = smtpUrl;
  const webhookSigningKey = optional(env.WEBHOOK_SIGNING_KEY);
  if (webhookSigningKey) candidate.webhookSigningKey = webhookSigningKey;
  const redisUrl = optional(env.REDIS_URL);
  if (redisUrl) candidate.redisUrl = redisUrl;

  const validate = validatorFor<Config>('config.schema.json');
  if (!validate(candidate)) {
    const first = validate.errors?.[0];
    const member = (first?.instancePath.split('/')[1] ?? '') as keyof Config;
    const variable = variableOf[member] ?? 'configuration';
    throw new ConfigError(`${variable} is invalid: ${first?.message ?? 'bad value'}`);
  }
  if (candidate.shard.count > 1 && candidate.natsUrl === undefined) {
    throw new ConfigError('SHARD is invalid: storage shards share the events of one JetStream stream; set NATS_URL, or leave SHARD unset (0/1)');
  }
  // Node refuses a headers timeout longer than the request timeout; say so in our terms.
  if (candidate.httpHeadersTimeoutMs > candidate.httpRequestTimeoutMs) {
    throw new ConfigError('HTTP_HEADERS_TIMEOUT_MS is invalid: must be at most HTTP_REQUEST_TIMEOUT_MS');
  }
  // The schema's "uri" format accepts a port over 65535, which the Redis client would only refuse later.
  if (candidate.redisUrl !== undefined && !URL.canParse(candidate.redisUrl)) {
    throw new ConfigError('REDIS_URL is invalid: not a URL (redis://host:port[/db])');
  }
  if ((candidate.natsTlsCert === undefined) !== (candidate.natsTlsKey === undefined)) {
    throw new ConfigError('NATS_TLS_CERT is invalid: a client certificate needs its key; set both NATS_TLS_CERT and NATS_TLS_KEY, or neither');
  }
  if (candidate.natsPassword !== undefined && candidate.natsUser === undefined) {
    throw new ConfigError('NATS_PASSWORD is invalid: set NATS_USER too');
  }
  if (candidate.metricsPort === candidate.port) {
    throw new ConfigError('METRICS_PORT is invalid: must differ from PORT (or leave it unset to serve /metrics on PORT)');
  }
  return candidate;
}
