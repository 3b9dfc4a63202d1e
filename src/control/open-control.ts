/** Picks the control plane's backend: a JetStream KV bucket in NATS mode, else DATA_DIR/control.duckdb. */
import { existsSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../core/config.js';
import { natsSecurity } from '../nats/nats-client.js';
import { CONTROL_FILE, DuckDbDocuments } from './duckdb-documents.js';
import { KvDocuments } from './kv-documents.js';
import { type ControlDocuments, type ControlEntry, ControlConflictError } from './types.js';

/** What a control.duckdb becomes once its documents are in the KV bucket (kept: delete it once satisfied). */
export const IMPORTED_SUFFIX = '.imported';

export async function openControl(config: Config, ownsDataDir: boolean): Promise<ControlDocuments> {
  if (!config.natsUrl) return DuckDbDocuments.open(config.dataDir);
  const kv = await KvDocuments.open({ servers: config.natsUrl, replicas: config.natsStreamReplicas, security: natsSecurity(config) });
  // A process that ran in NATS mode before the control plane moved to KV kept it in DATA_DIR: it moves
  // into the bucket once (a key already there wins), then the file is set aside.
  const file = join(config.dataDir, CONTROL_FILE);
  if (ownsDataDir && existsSync(file)) {
    try {
      await importDocuments(kv, config.dataDir);
      renameSync(file, file + IMPORTED_SUFFIX);
    } catch (error) {
      await kv.close();
      throw error;
    }
  }
  return kv;
}

async function importDocuments(kv: ControlDocuments, dataDir: string): Promise<void> {
  const local = await DuckDbDocuments.open(dataDir);
  try {
    const entries: ControlEntry[] = [];
    await local.watch((entry) => entries.push(entry));
    for (const entry of entries) {
      await kv.create(entry.key, entry.value).catch((error: unknown) => {
        if (!(error instanceof ControlConflictError)) throw error;
      });
    }
  } finally {
    await local.close();
  }
}
