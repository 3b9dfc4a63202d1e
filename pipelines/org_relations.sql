-- What trigger and segment SQL can read (SPEC 7): two views in the org's own database file, where
-- nothing of another org exists. Unqualified, or as <org>.event_triggers (the database's catalog is
-- named after the file, DATA_DIR/orgs/<org>.duckdb). Applied when the file is opened.
-- event_triggers: the production events, ts being the visible_at cursor column. Identity is the resolved
-- e-mail, NULL for events stored with requiresIdentity false.

CREATE OR REPLACE VIEW event_triggers AS
SELECT email AS identity,
       CASE WHEN email IS NOT NULL THEN 'email' END AS identity_type,
       visible_at AS ts,
       event_name AS event_type,
       message_id AS event_id,
       raw AS event_raw,
       properties,
       event_time,
       received_at,
       user_id,
       client_id
  FROM events
 WHERE environment = 'production';

CREATE OR REPLACE VIEW profiles AS
SELECT * EXCLUDE (org) FROM profiles_for(NULL::VARCHAR, NULL::VARCHAR[], folded_through());
