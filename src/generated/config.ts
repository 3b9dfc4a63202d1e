/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */

/**
 * Service configuration, read once from the environment at start (src/config.ts).
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
  roles: ['collector' | 'compactor' | 'api' | 'flows', ...('collector' | 'compactor' | 'api' | 'flows')[]];
  /**
   * LOG_LEVEL. Default: info
   */
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  /**
   * SMTP_URL. Unset: e-mail channel unavailable.
   */
  smtpUrl?: string;
  /**
   * WEBHOOK_ALLOW_PRIVATE. Default: false
   */
  webhookAllowPrivate: boolean;
}
