-- Storage layout of one org's data (SPEC 5): DATA_DIR/orgs/<org>.duckdb, one file per org, holding its
-- events, identities, quarantine, contacts, profile aggregates, triggers, flows and sends, and its own
-- position in the event log. Applied when the file is opened (src/storage/migrate.ts), every statement
-- idempotent. Rows keep their org column (the file was once shared by every org). Orgs, partner
-- credentials and tokens are not here: they are the control plane (pipelines/control.sql).

-- (No semicolons inside comments here: DuckDB splits statements before it strips comments.)
-- The org settings that shape its data here (the currency symbol of total_lifetime_value_jde), copied
-- from the control plane (pipelines/control.sql) when an org is created or changed and at every start.
CREATE TABLE IF NOT EXISTS org_settings (
  org              VARCHAR PRIMARY KEY,
  currency_symbol  VARCHAR NOT NULL
);

CREATE TABLE IF NOT EXISTS events (
  org          VARCHAR NOT NULL,
  environment  VARCHAR NOT NULL,
  message_id   VARCHAR NOT NULL,
  event_type   VARCHAR NOT NULL,   -- 'track' | 'identify' | 'alias'
  event_name   VARCHAR NOT NULL,   -- predefined name, 'custom_<eventName>', 'identify' or 'alias'
  client_id    VARCHAR NOT NULL,
  email        VARCHAR,            -- normalised; NULL only for requiresIdentity=false custom events
  user_id      VARCHAR,
  received_at  TIMESTAMPTZ NOT NULL,
  event_time   TIMESTAMPTZ NOT NULL,
  visible_at   TIMESTAMPTZ NOT NULL, -- compaction commit time, monotonic: the trigger cursor column
  properties   JSON,
  raw          JSON NOT NULL,
  log_seq      BIGINT NOT NULL
);
-- sentAt minus received_at when it was over 24 h: implausible, so not applied (event_time is then
-- received_at). NULL otherwise. Added after the table's first version, hence ALTER for existing stores.
ALTER TABLE events ADD COLUMN IF NOT EXISTS clock_skew_ms BIGINT;
-- The event's place among the entries of its log record (log_seq is the record's): with log_seq, the order
-- the log holds events in, which settles two observations received in the same millisecond. NULL (read
-- as 0) for events stored before it was kept.
ALTER TABLE events ADD COLUMN IF NOT EXISTS log_index INTEGER;

-- clientId -> e-mail for 7 days from the identify's receipt; the latest identify wins.
CREATE TABLE IF NOT EXISTS identify_mappings (
  org          VARCHAR NOT NULL,
  environment  VARCHAR NOT NULL,
  client_id    VARCHAR NOT NULL,
  email        VARCHAR NOT NULL,
  received_at  TIMESTAMPTZ NOT NULL,
  expires_at   TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (org, environment, client_id)
);

-- Track events waiting up to 7 days for an identify of their clientId.
CREATE TABLE IF NOT EXISTS pending_identity (
  org          VARCHAR NOT NULL,
  environment  VARCHAR NOT NULL,
  message_id   VARCHAR NOT NULL,
  client_id    VARCHAR NOT NULL,
  received_at  TIMESTAMPTZ NOT NULL,
  expires_at   TIMESTAMPTZ NOT NULL,
  body         JSON NOT NULL,
  log_seq      BIGINT NOT NULL
);
-- As events.log_index, kept for the event a release stores.
ALTER TABLE pending_identity ADD COLUMN IF NOT EXISTS log_index INTEGER;

CREATE TABLE IF NOT EXISTS quarantine (
  id           VARCHAR NOT NULL,
  org          VARCHAR NOT NULL,
  environment  VARCHAR NOT NULL,
  code         VARCHAR NOT NULL,
  errors       JSON NOT NULL,
  received_at  TIMESTAMPTZ NOT NULL,
  quarantined_at TIMESTAMPTZ NOT NULL,
  raw          JSON NOT NULL
);

-- One row per event that broke the tracking plan for its name (issue 42), written by compaction: mode
-- observe (the event is stored) or enforce (it is in quarantine, message_id is then its quarantine id).
-- reasons: JSON array of '<pointer into its own properties> <keyword> <message>'. Kept as long as quarantine.
CREATE TABLE IF NOT EXISTS plan_violations (
  environment  VARCHAR NOT NULL,
  event_name   VARCHAR NOT NULL,
  message_id   VARCHAR NOT NULL,
  mode         VARCHAR NOT NULL,
  received_at  TIMESTAMPTZ NOT NULL,
  reasons      JSON NOT NULL
);

-- The org's quarantine alert (issue 42), at most one row: a signed webhook when an event name's
-- quarantined share in the window crosses the threshold (src/reactions/alerts/quarantine-alerts.ts owns it).
CREATE TABLE IF NOT EXISTS quarantine_alerts (
  url             VARCHAR NOT NULL,
  threshold       DOUBLE NOT NULL,
  min_events      INTEGER NOT NULL,
  window_seconds  INTEGER NOT NULL
);

-- One row per environment and event type, for GET …/events/types: events stored, the latest received,
-- and the property keys seen with their JSON types (JSON {key: [types]}, at most 100 keys of at most 128
-- characters, properties_truncated when a type had more). The compactor folds newly visible events in
-- every few seconds (src/events/compaction/fold-event-types.ts); the admin API adds the events not folded yet,
-- and retention subtracts the events it deletes, so a type reads as a GROUP BY over events would.
CREATE TABLE IF NOT EXISTS event_types (
  environment           VARCHAR NOT NULL,
  event_name            VARCHAR NOT NULL,
  events                BIGINT NOT NULL,
  last_seen_at          TIMESTAMPTZ NOT NULL,
  properties            JSON NOT NULL,
  properties_truncated  BOOLEAN NOT NULL,
  PRIMARY KEY (environment, event_name)
);

-- The visible_at up to which events are folded into event_types (one row, none before the first fold).
CREATE TABLE IF NOT EXISTS event_types_folded (
  through    TIMESTAMPTZ NOT NULL
);

-- Per-contact aggregates of production events (SPEC 6.1 fields), so a profile reads rows of its own
-- contact instead of every event of the org. The compactor folds newly visible events in every few
-- seconds (src/events/compaction/fold-contact-activity.ts); profiles combine these rows with the events not
-- folded yet (macros in profiles.sql), so they are exact whenever the fold last ran.
-- Each trait column keeps the latest non-null observation, with the time it was observed.
CREATE TABLE IF NOT EXISTS contact_activity (
  org                VARCHAR NOT NULL,
  email              VARCHAR NOT NULL,
  first_seen_at      TIMESTAMPTZ NOT NULL,
  last_seen_at       TIMESTAMPTZ NOT NULL,
  revenue            DOUBLE NOT NULL,
  last_purchase_at   TIMESTAMPTZ,
  first_name         VARCHAR,
  first_name_at      TIMESTAMPTZ,
  last_name          VARCHAR,
  last_name_at       TIMESTAMPTZ,
  user_id            VARCHAR,
  user_id_at         TIMESTAMPTZ,
  address_city       VARCHAR,
  address_city_at    TIMESTAMPTZ,
  address_state      VARCHAR,
  address_state_at   TIMESTAMPTZ,
  address_country    VARCHAR,
  address_country_at TIMESTAMPTZ,
  PRIMARY KEY (org, email)
);

-- The contact's time zone (IANA name) from events, for quiet hours; added after the table's first
-- version, hence ALTER for existing stores.
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS timezone VARCHAR;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS timezone_at TIMESTAMPTZ;
-- Each trait's observation's place in the log (log_position() of profiles.sql), which settles observations
-- received in the same millisecond, as two identifies of one batch are. NULL in rows folded before it was kept.
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS first_name_pos BIGINT;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS last_name_pos BIGINT;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS user_id_pos BIGINT;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS address_city_pos BIGINT;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS address_state_pos BIGINT;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS address_country_pos BIGINT;
ALTER TABLE contact_activity ADD COLUMN IF NOT EXISTS timezone_pos BIGINT;

-- Distinct orders per contact (transactionId, else the messageId of the complete_transaction event).
CREATE TABLE IF NOT EXISTS contact_orders (
  org        VARCHAR NOT NULL,
  email      VARCHAR NOT NULL,
  order_key  VARCHAR NOT NULL,
  PRIMARY KEY (org, email, order_key)
);

-- The visible_at up to which events are folded into the two tables above (one row, none before the
-- first fold), written in the transaction of the fold.
CREATE TABLE IF NOT EXISTS contact_activity_folded (
  through    TIMESTAMPTZ NOT NULL
);

-- The compactor's log position, saved in the same transaction as the rows it produced.
CREATE TABLE IF NOT EXISTS log_cursor (
  name         VARCHAR PRIMARY KEY,
  seq          BIGINT NOT NULL,
  visible_at   TIMESTAMPTZ
);

-- Imported contacts (POST /admin/v1/orgs/{slug}/contacts/import), upserted by normalised e-mail.
-- custom holds the extra columns of the import as a JSON object.
CREATE TABLE IF NOT EXISTS contacts (
  org              VARCHAR NOT NULL,
  email            VARCHAR NOT NULL,
  first_name       VARCHAR,
  last_name        VARCHAR,
  user_id          VARCHAR,
  address_city     VARCHAR,
  address_state    VARCHAR,
  address_country  VARCHAR,
  custom           JSON NOT NULL,
  updated_at       TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (org, email)
);

-- The custom columns imports brought (keys of contacts.custom): each is a column of the view profiles
-- that trigger and segment SQL reads, as text (src/events/profiles/profiles-view.ts). Added to by imports.
CREATE TABLE IF NOT EXISTS profile_columns (
  name  VARCHAR PRIMARY KEY
);

-- Values of traits written in SQL (src/reactions/triggers/trait-values.ts writes them): per contact and
-- trait its value as JSON, merged into the profile's custom fields (profiles.sql), so the Audience API
-- serves it and the view profiles has it as a column (of the type trait_types records). No key: a
-- recompute deletes and inserts the rows of the contacts whose value changed.
CREATE TABLE IF NOT EXISTS contact_traits (
  org    VARCHAR NOT NULL,
  email  VARCHAR NOT NULL,
  name   VARCHAR NOT NULL,
  value  JSON NOT NULL
);
CREATE TABLE IF NOT EXISTS trait_types (
  name  VARCHAR PRIMARY KEY,
  type  VARCHAR NOT NULL
);

-- Trigger and segment SQL, one row per version seen in QUERIES_DIR or written by PUT (SPEC 7).
-- status: valid or invalid (refused, error says why). The live version is the newest valid one.
CREATE TABLE IF NOT EXISTS trigger_versions (
  org         VARCHAR NOT NULL,
  kind        VARCHAR NOT NULL,
  name        VARCHAR NOT NULL,
  version     INTEGER NOT NULL,
  hash        VARCHAR NOT NULL,
  sql         VARCHAR NOT NULL,
  status      VARCHAR NOT NULL,
  error       VARCHAR,
  created_at  TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (org, kind, name, version)
);

-- Event-triggered flows (SPEC 8). cursor_at is the end of the last window run: the next window is
-- (cursor_at, newest visible_at]. It is advanced in the transaction that writes the window sends.
CREATE TABLE IF NOT EXISTS flows (
  org          VARCHAR NOT NULL,
  id           VARCHAR NOT NULL,
  definition   JSON NOT NULL,
  status       VARCHAR NOT NULL,
  created_at   TIMESTAMPTZ NOT NULL,
  updated_at   TIMESTAMPTZ NOT NULL,
  live_since   TIMESTAMPTZ,
  cursor_at    TIMESTAMPTZ,
  last_run_at  TIMESTAMPTZ,
  last_error   VARCHAR,
  PRIMARY KEY (org, id)
);

-- The outbox: one row per send key (flow, contact, event_id), written with the cursor advance.
-- status: pending (to deliver), delivered, failed (refused without retry), dead (retries exhausted),
-- holdout (experiment holdout: recorded, nothing sent), entered (an entry of a flow with steps: its
-- messages are rows of their own, keyed by entry and step), deferred and cancelled (quiet hours, below).
-- send_id is derived from the key.
CREATE TABLE IF NOT EXISTS flow_sends (
  send_id       VARCHAR PRIMARY KEY,
  org           VARCHAR NOT NULL,
  flow_id       VARCHAR NOT NULL,
  email         VARCHAR NOT NULL,
  event_id      VARCHAR NOT NULL,
  variant       VARCHAR,
  channel       VARCHAR,
  content       JSON,
  trigger_hash  VARCHAR NOT NULL,
  status        VARCHAR NOT NULL,
  attempts      INTEGER NOT NULL,
  last_error    VARCHAR,
  created_at    TIMESTAMPTZ NOT NULL,
  sent_at       TIMESTAMPTZ
);

-- Sends of a transactional flow: the org's frequency caps do not count them (frequency-caps.ts). Added
-- after the table's first version, hence ALTER for existing stores.
ALTER TABLE flow_sends ADD COLUMN IF NOT EXISTS transactional BOOLEAN DEFAULT false;
-- A send decided inside quiet hours has status deferred until due_at (src/reactions/flows/deferred-sends.ts),
-- then pending (sent) or cancelled (consent, suppression or a cap said no by then, in last_error).
ALTER TABLE flow_sends ADD COLUMN IF NOT EXISTS due_at TIMESTAMPTZ;

-- Why each trigger row of a flow did or did not become a send (the decisions endpoint).
CREATE TABLE IF NOT EXISTS flow_decisions (
  org           VARCHAR NOT NULL,
  flow_id       VARCHAR NOT NULL,
  email         VARCHAR,
  identity      VARCHAR,
  identity_type VARCHAR,
  event_id      VARCHAR,
  outcome       VARCHAR NOT NULL,
  variant       VARCHAR,
  send_id       VARCHAR,
  trigger_hash  VARCHAR NOT NULL,
  reason        VARCHAR,
  decided_at    TIMESTAMPTZ NOT NULL
);

-- Entries of flows with steps (src/reactions/flows/wait-store.ts): one row per entry still in its
-- steps, deleted when it ends. step is the step it is at. waiting false: that step runs at due_at.
-- waiting true: that step is a wait ending at due_at (a waitUntil also ends when until_event of the
-- contact is stored after since with an event_time at or after entered_event_time). entered_since
-- is the same mark at entry, for the flow's exit event. data is the entry's template data (event,
-- flow, variant) and last_wait how the last waitUntil ended (event or timeout).
CREATE TABLE IF NOT EXISTS flow_waits (
  entry_id           VARCHAR NOT NULL,
  org                VARCHAR NOT NULL,
  flow_id            VARCHAR NOT NULL,
  email              VARCHAR NOT NULL,
  event_id           VARCHAR NOT NULL,
  variant            VARCHAR,
  trigger_hash       VARCHAR NOT NULL,
  step               INTEGER NOT NULL,
  waiting            BOOLEAN NOT NULL,
  until_event        VARCHAR,
  since              TIMESTAMPTZ NOT NULL,
  entered_since      TIMESTAMPTZ NOT NULL,
  entered_event_time TIMESTAMPTZ NOT NULL,
  last_wait          VARCHAR,
  due_at             TIMESTAMPTZ NOT NULL,
  entered_at         TIMESTAMPTZ NOT NULL,
  data               JSON NOT NULL
);

-- Subscription topics of the org (src/reactions/consent/consent-store.ts): a flow names one; a contact
-- without a consent change for a topic has its default ('subscribed': opt-out; 'unsubscribed': opt-in).
CREATE TABLE IF NOT EXISTS topics (
  topic          VARCHAR PRIMARY KEY,
  name           VARCHAR NOT NULL,
  default_status VARCHAR NOT NULL,
  created_at     TIMESTAMPTZ NOT NULL,
  updated_at     TIMESTAMPTZ NOT NULL
);

-- The latest consent change of a contact per topic, and where it came from ('admin', 'link', 'event').
CREATE TABLE IF NOT EXISTS contact_consent (
  email      VARCHAR NOT NULL,
  topic      VARCHAR NOT NULL,
  status     VARCHAR NOT NULL,
  source     VARCHAR NOT NULL,
  changed_at TIMESTAMPTZ NOT NULL,
  PRIMARY KEY (email, topic)
);

-- The visible_at up to which events' traits.subscriptions are applied to contact_consent (one row).
CREATE TABLE IF NOT EXISTS consent_events_applied (
  through    TIMESTAMPTZ NOT NULL
);

-- Erased and suppressed contacts (src/events/compaction/tombstones.ts), by the SHA-256 of the e-mail:
-- their events at or below through_seq in the log (at every position when suppressed) are never
-- compacted again.
CREATE TABLE IF NOT EXISTS erased_contacts (
  email_hash   VARCHAR PRIMARY KEY,
  through_seq  BIGINT NOT NULL,
  suppressed   BOOLEAN NOT NULL,
  erased_at    TIMESTAMPTZ NOT NULL
);

-- Erasure requests and their receipts (src/privacy/erasure.ts). email is kept while the erasure is
-- pending (so a restart resumes it) and cleared once done; the receipt keeps the hash, the times and
-- the rows removed per kind (JSON).
CREATE TABLE IF NOT EXISTS erasures (
  id            VARCHAR PRIMARY KEY,
  email_hash    VARCHAR NOT NULL,
  email         VARCHAR,
  suppress      BOOLEAN NOT NULL,
  through_seq   BIGINT NOT NULL,
  status        VARCHAR NOT NULL,
  requested_at  TIMESTAMPTZ NOT NULL,
  done_at       TIMESTAMPTZ,
  removed       JSON
);

-- Occurrences of scheduled and recurring flows (src/reactions/flows/occurrence-store.ts): one row per
-- (flow, occurrence), the occurrence being its local date-time ('2026-12-01T09:00'). status: sending
-- (its members are being decided), done, or skipped (reason says why: its time had passed). members
-- is the segment's size when it started, missed those whose time had passed more than the grace then,
-- decided how many are decided so far and outcomes their count per outcome (JSON). segment_hash is the
-- segment version read, the trigger_hash of its sends.
CREATE TABLE IF NOT EXISTS flow_occurrences (
  org           VARCHAR NOT NULL,
  flow_id       VARCHAR NOT NULL,
  occurrence    VARCHAR NOT NULL,
  due_at        TIMESTAMPTZ NOT NULL,
  status        VARCHAR NOT NULL,
  segment_hash  VARCHAR,
  members       INTEGER NOT NULL,
  missed        INTEGER NOT NULL,
  decided       INTEGER NOT NULL,
  outcomes      JSON NOT NULL,
  reason        VARCHAR,
  started_at    TIMESTAMPTZ NOT NULL,
  finished_at   TIMESTAMPTZ,
  PRIMARY KEY (org, flow_id, occurrence)
);

-- The members of an occurrence still to decide, each with when it is due (its own zone's instant with
-- timeZone contact). Written with the occurrence row when it starts; a chunk's rows are deleted in the
-- transaction that records its sends, so a restart goes on with exactly the members left.
CREATE TABLE IF NOT EXISTS flow_occurrence_members (
  org         VARCHAR NOT NULL,
  flow_id     VARCHAR NOT NULL,
  occurrence  VARCHAR NOT NULL,
  email       VARCHAR NOT NULL,
  due_at      TIMESTAMPTZ NOT NULL
);
