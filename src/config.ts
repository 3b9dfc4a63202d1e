/**
 * Reads the configuration from the environment once, validates it with schemas/config.schema.json,
 * and stops start-up with a message naming the variable when a value is wrong.
 * Nothing else in the service reads process.env.
 */
import type { Config } from './generated/config.js';
import { validatorFor } from './schemas.js';
import { type Shard, SINGLE_SHARD, parseShard } from './storage/shard.js';

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
  storageThread: 'STORAGE_THREAD',
  natsPublishTimeoutMs: 'NATS_PUBLISH_TIMEOUT_MS',
  natsStreamReplicas: 'NATS_STREAM_REPLICAS',
  shard: 'SHARD',
  httpHeadersTimeoutMs: 'HTTP_HEADERS_TIMEOUT_MS',
  httpRequestTimeoutMs: 'HTTP_REQUEST_TIMEOUT_MS',
  httpKeepAliveTimeoutMs: 'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  redisUrl: 'REDIS_URL',
  redisKeyPrefix: 'REDIS_KEY_PREFIX',
};

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
    storageThread: env.STORAGE_THREAD || 'worker',
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
  };
  const natsUrl = optional(env.NATS_URL);
  if (natsUrl) candidate.natsUrl = natsUrl;
  const adminKey = optional(env.ADMIN_KEY);
  if (adminKey) candidate.adminKey = adminKey;
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
  return candidate;
}
