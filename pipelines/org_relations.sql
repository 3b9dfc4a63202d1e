-- What trigger and segment SQL of one org can read (SPEC 7): a schema named after the org with two
-- views. src/triggers/org-relations.ts applies this per org, with the org slug in place of ORG_SLUG
-- (slugs match ^[a-z][a-z0-9_]+$, so they are safe identifiers and literals).
-- event_triggers: the production events of the org, ts being the visible_at cursor column.
-- Identity is the resolved e-mail, NULL for events stored with requiresIdentity false.

CREATE SCHEMA IF NOT EXISTS ORG_SLUG;

CREATE OR REPLACE VIEW ORG_SLUG.event_triggers AS
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
  FROM main.events
 WHERE org = 'ORG_SLUG' AND environment = 'production';

CREATE OR REPLACE VIEW ORG_SLUG.profiles AS
SELECT * EXCLUDE (org) FROM main.profiles_for('ORG_SLUG', NULL::VARCHAR[], main.folded_through());
