/** Picks the control plane's backend: a JetStream KV bucket in NATS mode, else DATA_DIR/control.duckdb. */
import type { Config } from '../config.js';
import { DuckDbDocuments } from './duckdb-documents.js';
import { KvDocuments } from './kv-documents.js';
import type { ControlDocuments } from './types.js';

export function openControl(config: Pick<Config, 'natsUrl' | 'dataDir' | 'natsStreamReplicas'>): Promise<ControlDocuments> {
  if (config.natsUrl) return KvDocuments.open({ servers: config.natsUrl, replicas: config.natsStreamReplicas });
  return DuckDbDocuments.open(config.dataDir);
}
