/** Picks the log backend from config: JetStream when a NATS URL is configured, else the embedded file log. */
import { join } from 'node:path';
import { EmbeddedLog, type EmbeddedLogOptions } from './embedded-log.js';
import { DEFAULT_STREAM, JetStreamLog, type JetStreamLogOptions } from './jetstream-log.js';
import { describeLogBehind, type LogBackend, type LogBehind } from './types.js';

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
  /** This process's org databases (storage/checkpoint.ts): the log numbers new records above `highWater`. */
  positions?: { highWater: number; compactedSeq: number };
  /** Told, with the line to log, when the log ended below the high-water mark and now continues above it. */
  onBehind?: (behind: LogBehind, message: string) => void;
}

export async function openLog(options: OpenLogOptions): Promise<LogBackend> {
  const behind = (name: string) => (report: LogBehind) => options.onBehind?.(report, describeLogBehind(name, report));
  if (options.natsUrl) {
    const stream = options.jetstream?.stream ?? DEFAULT_STREAM;
    return JetStreamLog.open({ servers: options.natsUrl, ...options.jetstream, ...options.positions, onBehind: behind(`JetStream stream ${stream}`) });
  }
  const dir = join(options.dataDir, 'log');
  return EmbeddedLog.open(dir, { ...options.embedded, ...options.positions, onTornTail: options.onTornTail, onBehind: behind(`the embedded log (${dir})`) });
}
