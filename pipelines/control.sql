-- The control plane: orgs, partner credentials and Audience API tokens, in DATA_DIR/control.duckdb
-- (src/control/control-plane.ts). A DuckDB file of its own, apart from the orgs' data in audience.duckdb:
-- trigger and segment SQL runs against that one only, so even SQL that got past the guard finds no
-- secret hash here. Applied at start, every statement idempotent.
-- (No semicolons inside comments here: DuckDB splits statements before it strips comments.)

CREATE TABLE IF NOT EXISTS orgs (
  slug              VARCHAR PRIMARY KEY,
  name              VARCHAR NOT NULL,
  audience_api      BOOLEAN NOT NULL,
  rate_limit        INTEGER NOT NULL,
  currency_symbol   VARCHAR NOT NULL,
  content_fields    JSON NOT NULL,
  not_found_status  INTEGER NOT NULL,
  created_at        TIMESTAMPTZ NOT NULL,
  updated_at        TIMESTAMPTZ NOT NULL
);

-- Partner credentials: one per (org, environment). Only the SHA-256 of the secret is kept.
CREATE TABLE IF NOT EXISTS partner_credentials (
  partner_id   VARCHAR PRIMARY KEY,
  org          VARCHAR NOT NULL,
  environment  VARCHAR NOT NULL,
  secret_hash  VARCHAR NOT NULL,
  created_at   TIMESTAMPTZ NOT NULL,
  rotated_at   TIMESTAMPTZ
);

-- Audience API tokens (SPEC 3). Only the SHA-256 of a token is kept, plus its last 3 characters
-- so people can recognise it. Active means revoked_at IS NULL and expires_at is NULL or in the future.
-- last_used_at is flushed from memory at most every 30 s and at shutdown, never per request.
CREATE TABLE IF NOT EXISTS audience_tokens (
  id            VARCHAR PRIMARY KEY,
  org           VARCHAR NOT NULL,
  token_hash    VARCHAR NOT NULL,
  last3         VARCHAR NOT NULL,
  created_by    VARCHAR NOT NULL,
  label         VARCHAR,
  created_at    TIMESTAMPTZ NOT NULL,
  expires_at    TIMESTAMPTZ,
  revoked_at    TIMESTAMPTZ,
  last_used_at  TIMESTAMPTZ
);
