/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * Service configuration, read once from the environment at start (src/core/config.ts).
 */
export interface Config {
  /**
   * PORT. Default: 8080
   */
  port: number;
  /**
   * HOST. Default: 127.0.0.1
   */
  host: string;
  /**
   * DATA_DIR. Default: ./data
   */
  dataDir: string;
  /**
   * NATS_URL. Unset: embedded log.
   */
  natsUrl?: string;
  /**
   * ADMIN_KEY. Unset: generated into DATA_DIR/admin.key.
   */
  adminKey?: string;
  /**
   * QUERIES_DIR. Default: ./queries
   */
  queriesDir: string;
  /**
   * ROLES, comma-separated. Default: all
   *
   * @minItems 1
   */
  roles: ('collector' | 'compactor' | 'api' | 'flows')[];
  /**
   * LOG_LEVEL. Default: info
   */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * PUBLIC_URL: where people reach the service (https://audience.example.com): the base of unsubscribe links and the collector the analytics.js settings name. At most 366 characters: with the longest link token (616) a List-Unsubscribe line stays within the 998 characters RFC 5322 allows. No answer takes a host from request headers (Host, X-Forwarded-*, Forwarded: any client writes them). Unset: links use http://HOST:PORT and the settings the address the connection reached, which works for no one behind a proxy: set it before sending marketing or serving analytics.js.
   */
  publicUrl?: string;
  /**
   * SMTP_URL. Unset: e-mail channel unavailable.
   */
  smtpUrl?: string;
  /**
   * WEBHOOK_ALLOW_PRIVATE. Default: false
   */
  webhookAllowPrivate: boolean;
  /**
   * WEBHOOK_SIGNING_KEY: master key each org's webhook signing secret is derived from. Unset: generated into DATA_DIR/webhook.key.
   */
  webhookSigningKey?: string;
  /**
   * WEBHOOK_TIMEOUT_MS: per attempt. Default: 10000
   */
  webhookTimeoutMs: number;
  /**
   * WEBHOOK_MAX_ATTEMPTS before dead-letter. Default: 6
   */
  webhookMaxAttempts: number;
  /**
   * WEBHOOK_BACKOFF_MS: first retry delay, doubled per attempt, full jitter. Default: 1000
   */
  webhookBackoffMs: number;
  /**
   * TRIGGER_TIMEOUT_MS: a trigger or segment query running longer is interrupted. Default: 10000
   */
  triggerTimeoutMs: number;
  /**
   * TRIGGER_MAX_ROWS: trigger rows one flow run takes; a window with more is run in smaller windows over several runs. Default: 100000
   */
  triggerMaxRows: number;
  /**
   * DUCKDB_MEMORY_LIMIT: memory of all open org databases together. Default: 4GB
   */
  duckdbMemoryLimit: string;
  /**
   * NATS_PUBLISH_TIMEOUT_MS: how long a JetStream publish waits for its ack; without one the event may be stored and collect answers 503 log_outcome_unknown. Default: 5000
   */
  natsPublishTimeoutMs: number;
  /**
   * HTTP_HEADERS_TIMEOUT_MS: a request's headers must arrive within this time, else the connection is closed. At most HTTP_REQUEST_TIMEOUT_MS. Default: 10000
   */
  httpHeadersTimeoutMs: number;
  /**
   * HTTP_REQUEST_TIMEOUT_MS: a whole request (headers and body) must arrive within this time, else 408 and the connection is closed. Default: 30000
   */
  httpRequestTimeoutMs: number;
  /**
   * HTTP_KEEP_ALIVE_TIMEOUT_MS: an idle keep-alive connection is closed after this time. Default: 72000
   */
  httpKeepAliveTimeoutMs: number;
  /**
   * ORG_DATABASES_MAX_OPEN: org databases (DATA_DIR/orgs/<org>.duckdb) open at once; each gets DUCKDB_MEMORY_LIMIT divided by this (at least 64 MiB). Default: 16
   */
  orgDatabasesMaxOpen: number;
  /**
   * ORG_DATABASE_THREADS: DuckDB threads of each open org database. Default: 2
   */
  orgDatabaseThreads: number;
  /**
   * ORG_DATABASE_IDLE_MS: an org database unused this long is closed. Default: 60000
   */
  orgDatabaseIdleMs: number;
  /**
   * SHARD=<i>/<n> on a storage process (roles compactor, flows): it owns the orgs whose slug hashes (32-bit FNV-1a of the UTF-8 slug) to i modulo n, each in its own DATA_DIR. Default: 0/1 (every org)
   */
  shard: {
    index: number;
    count: number;
  };
  /**
   * NATS_STREAM_REPLICAS: copies of the event stream and the control-plane KV bucket when they are created (3 on a 3-node cluster). Default: 1
   */
  natsStreamReplicas: number;
  /**
   * REDIS_URL: redis://host:6379 (rediss:// for TLS). The org and failed-auth rate limits become one budget across all api processes. Unset: each process limits on its own.
   */
  redisUrl?: string;
  /**
   * REDIS_KEY_PREFIX: start of every Redis key of this deployment, so several deployments can share one Redis. Default: audience
   */
  redisKeyPrefix: string;
  /**
   * TRUST_PROXY: false (default), true (every peer), or a comma-separated list of load-balancer addresses or CIDRs whose X-Forwarded-For gives the client address (failed-auth limiter, logs).
   */
  trustProxy: boolean | string[];
  /**
   * METRICS_PORT: serve /metrics on this port (on HOST), without a key, and not on PORT. Unset: /metrics on PORT, behind the admin key.
   */
  metricsPort?: number;
  /**
   * SHUTDOWN_TIMEOUT_MS: after SIGTERM or an uncaught error, exit 1 when closing takes longer. Default: 25000
   */
  shutdownTimeoutMs: number;
  /**
   * RETENTION_EVENTS_DAYS: events received longer ago are deleted once folded into the profile aggregates (0: kept forever). Default: 365
   */
  retentionEventsDays: number;
  /**
   * RETENTION_EVENTS_BY_EVENT_TIME_DAYS: events whose event time is older are deleted likewise (0: no limit by event time). Default: 0
   */
  retentionEventsByEventTimeDays: number;
  /**
   * LOG_SEGMENT_MB: the embedded log starts a new segment file once the current one would pass this size. Default: 64
   */
  logSegmentMb: number;
  /**
   * LOG_RETENTION_HOURS: a closed segment of the embedded log whose records are all compacted is deleted this long after it was closed (0: as soon as compacted). Default: 24
   */
  logRetentionHours: number;
  /**
   * RETENTION_QUARANTINE_DAYS: rejected events kept this long (0: forever). Default: 30
   */
  retentionQuarantineDays: number;
  /**
   * RETENTION_DECISIONS_DAYS: flow decisions (why a contact was or was not messaged) kept this long (0: forever). Default: 365
   */
  retentionDecisionsDays: number;
  /**
   * RETENTION_SENDS_CONTENT_DAYS: the rendered message of a finished send is cleared after this long; the send itself stays (0: forever). Default: 90
   */
  retentionSendsContentDays: number;
  /**
   * NATS_STREAM_MAX_AGE: JetStream removes events older than this from the stream, compacted or not (e.g. 7d, 72h; 0: no age limit). Default: 7d
   */
  natsStreamMaxAgeMs: number;
  /**
   * NATS_STREAM_MAX_BYTES: the stream's size limit; the oldest events go first (e.g. 50GB; -1: no limit). Default: -1
   */
  natsStreamMaxBytes: number;
  /**
   * NATS_CREDS: a NATS credentials file (JWT and NKey seed) for every connection.
   */
  natsCreds?: string;
  /**
   * NATS_USER: user name for NATS (with NATS_PASSWORD).
   */
  natsUser?: string;
  /**
   * NATS_PASSWORD: password of NATS_USER.
   */
  natsPassword?: string;
  /**
   * NATS_TLS_CA: PEM file of the CA that signed the NATS servers' certificates (turns TLS on).
   */
  natsTlsCa?: string;
  /**
   * NATS_TLS_CERT: PEM client certificate, when the servers verify clients (with NATS_TLS_KEY).
   */
  natsTlsCert?: string;
  /**
   * NATS_TLS_KEY: PEM key of NATS_TLS_CERT.
   */
  natsTlsKey?: string;
  /**
   * STORAGE_PROCESS: where the org databases, compaction and org SQL run. child (default): a supervised process of their own, restarted when it ends, killed to stop a query DuckDB cannot interrupt; inline: on the thread that answers HTTP, with none of that protection (tests with an injected clock only).
   */
  storageProcess: 'child' | 'inline';
}
