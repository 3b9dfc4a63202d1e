/** Picks the log backend from config: JetStream when a NATS URL is configured, else the embedded file log. */
import { join } from 'node:path';
import { EmbeddedLog, type TornTail } from './embedded-log.js';
import { JetStreamLog } from './jetstream-log.js';
import type { LogBackend } from './types.js';

export interface OpenLogOptions {
  natsUrl?: string;
  /** The embedded log lives in `<dataDir>/log`. */
  dataDir: string;
  /** JetStream only: how long a publish waits for its ack. */
  publishTimeoutMs?: number;
  /** JetStream only: copies of each record when the stream is created. */
  replicas?: number;
  /** Embedded log only: told when a torn tail was cut off on open (worth a warning in the service log). */
  onTornTail?: (tail: TornTail) => void;
}

export async function openLog(options: OpenLogOptions): Promise<LogBackend> {
  if (options.natsUrl) {
    return JetStreamLog.open({
      servers: options.natsUrl,
      ...(options.publishTimeoutMs !== undefined ? { publishTimeoutMs: options.publishTimeoutMs } : {}),
      ...(options.replicas !== undefined ? { replicas: options.replicas } : {}),
    });
  }
  return EmbeddedLog.open(join(options.dataDir, 'log'), { onTornTail: options.onTornTail });
}
