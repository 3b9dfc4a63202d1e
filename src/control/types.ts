/**
 * The control plane: orgs, partner credential hashes and Audience API tokens, as JSON documents with
 * revisions. Two backends implement `ControlDocuments` and pass test/control/contract.ts: a DuckDB file
 * (the embedded default, duckdb-documents.ts) and a JetStream KV bucket (NATS mode, kv-documents.ts),
 * which every process of a deployment watches. Writes are compare-and-set on a document's revision, so
 * rules that span a document (an org's pool of 10 active tokens) hold when two processes race.
 */

/** One document and the revision it was written at (revisions only grow, across all documents). */
export interface ControlEntry {
  key: string;
  value: unknown;
  revision: number;
}

export interface ControlDocuments {
  readonly kind: 'duckdb' | 'kv';
  /**
   * Delivers every document, then every change (this process's and others') in revision order, until
   * closed. Resolves once the documents present at the call were delivered. A change may be delivered
   * more than once; a receiver ignores a revision it has already seen.
   */
  watch(onEntry: (entry: ControlEntry) => void): Promise<void>;
  /** The document as stored now (not as last watched), or undefined. */
  get(key: string): Promise<ControlEntry | undefined>;
  /** Every document as stored now, in key order (backups). */
  list(): Promise<ControlEntry[]>;
  /** Writes a new document; `ControlConflictError` when the key exists. */
  create(key: string, value: unknown): Promise<ControlEntry>;
  /** Replaces a document written at `revision`; `ControlConflictError` when it changed since. */
  update(key: string, value: unknown, revision: number): Promise<ControlEntry>;
  /** Whether the backend answers now (readiness); may do I/O, so callers bound its time. */
  health(): Promise<{ ok: true } | { ok: false; reason: string; fatal: boolean }>;
  close(): Promise<void>;
}

/** The document exists (create) or changed since the revision given (update): read it again and retry. */
export class ControlConflictError extends Error {
  constructor(readonly key: string) {
    super(`control document ${key} was changed concurrently`);
    this.name = 'ControlConflictError';
  }
}

/** The backend cannot be reached (NATS down): nothing was written. */
export class ControlUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ControlUnavailableError';
  }
}

/** Document keys: one per org for its settings and credentials, one for its tokens. */
export const orgKey = (slug: string): string => `org.${slug}`;
export const tokensKey = (slug: string): string => `tokens.${slug}`;
