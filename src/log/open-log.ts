/** Picks the log backend from config: JetStream when a NATS URL is configured, else the embedded file log. */
import { join } from 'node:path';
import { EmbeddedLog, type EmbeddedLogOptions } from './embedded-log.js';
import { JetStreamLog, type JetStreamLogOptions } from './jetstream-log.js';
import type { LogBackend } from './types.js';

export interface OpenLogOptions {
  natsUrl?: string;
  /** The embedded log lives in `<dataDir>/log`. */
  dataDir: string;
  /** JetStream only: publish timeout, stream replicas and limits, credentials and TLS. */
  jetstream?: Omit<JetStreamLogOptions, 'servers'>;
  /** Embedded log only: segment size and retention. */
  embedded?: Omit<EmbeddedLogOptions, 'onTornTail'>;
  /** Embedded log only: told when a torn tail was cut off on open (worth a warning in the service log). */
  onTornTail?: EmbeddedLogOptions['onTornTail'];
}

export async function openLog(options: OpenLogOptions): Promise<LogBackend> {
  if (options.natsUrl) return JetStreamLog.open({ servers: options.natsUrl, ...options.jetstream });
  return EmbeddedLog.open(join(options.dataDir, 'log'), { ...options.embedded, onTornTail: options.onTornTail });
}
