-- The control plane of the embedded default: orgs (with their partner credential hashes) and Audience
-- API tokens as JSON documents with revisions, in DATA_DIR/control.duckdb (src/control/duckdb-documents.ts).
-- In NATS mode the same documents live in a JetStream KV bucket instead. A DuckDB file of its own, apart
-- from the orgs' databases where trigger SQL runs, so even SQL that got past the guard finds no secret
-- hash. Applied at start, idempotent.
-- (No semicolons inside comments here: DuckDB splits statements before it strips comments.)

CREATE TABLE IF NOT EXISTS control_documents (
  key       VARCHAR PRIMARY KEY,
  value     JSON NOT NULL,
  revision  BIGINT NOT NULL
);
