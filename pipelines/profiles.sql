-- The contact profile (SPEC 6.1): one row per (org, contact e-mail).
-- Applied when an org's file is opened (src/storage/migrate.ts). Served from memory: src/events/profiles/ materializes the rows of
-- contacts that changed after each compaction batch, so a lookup never scans events.
-- Sources: imported contacts, identify and registration traits (per field, the latest observation
-- wins), complete_transaction events, flow sends (delivered sends are campaigns received, and delivered
-- and holdout sends give flow_variant_membership), traits written in SQL (contact_traits, as custom
-- fields). Only production events shape profiles.
-- Events reach profiles through per-contact aggregates (tables contact_activity and contact_orders)
-- combined with the few events not folded into them yet, so computing a profile reads rows of its
-- contact and the newest events, never all the events of the org.

-- An event's place in the log: its record's seq, then its place among the record's entries (fewer than
-- 2^20: a record holds at most 768 KB, group-commit.ts). NULL log_index (events stored before it was kept) reads as 0.
CREATE OR REPLACE MACRO log_position(seq, idx) AS seq * 1048576 + coalesce(idx, 0);

-- The order of two observations of one trait: the later receipt, then the later place in the log, so two
-- received in the same millisecond (two identifies of one batch) give the one sent last, in every
-- computation. NULL when there is no observation (arg_max skips it).
CREATE OR REPLACE MACRO observed(received, pos) AS epoch_us(received)::HUGEINT * 18446744073709551616 + coalesce(pos, 0);

-- One row per production event with an identity made visible after `after` (every event when NULL) of
-- the contacts `emails` (all when NULL), in the shape of contact_activity. The contacts are chosen where
-- the events are read: as a filter over the rows below, each event's traits were extracted before it
-- (a refresh of 6,000 contacts read ~40,000 unfolded events of 20,000 contacts under collect).
CREATE OR REPLACE MACRO event_activity(after, emails) AS TABLE
SELECT org, email,
       received_at AS first_seen_at,
       received_at AS last_seen_at,
       CASE WHEN event_name = 'complete_transaction'
            THEN coalesce(TRY_CAST(json_extract(properties, '$.revenue') AS DOUBLE), 0) ELSE 0 END AS revenue,
       CASE WHEN event_name = 'complete_transaction' THEN event_time END AS last_purchase_at,
       first_name, CASE WHEN first_name IS NOT NULL THEN received_at END AS first_name_at, CASE WHEN first_name IS NOT NULL THEN pos END AS first_name_pos,
       last_name, CASE WHEN last_name IS NOT NULL THEN received_at END AS last_name_at, CASE WHEN last_name IS NOT NULL THEN pos END AS last_name_pos,
       user_id, CASE WHEN user_id IS NOT NULL THEN received_at END AS user_id_at, CASE WHEN user_id IS NOT NULL THEN pos END AS user_id_pos,
       address_city, CASE WHEN address_city IS NOT NULL THEN received_at END AS address_city_at, CASE WHEN address_city IS NOT NULL THEN pos END AS address_city_pos,
       address_state, CASE WHEN address_state IS NOT NULL THEN received_at END AS address_state_at, CASE WHEN address_state IS NOT NULL THEN pos END AS address_state_pos,
       address_country, CASE WHEN address_country IS NOT NULL THEN received_at END AS address_country_at, CASE WHEN address_country IS NOT NULL THEN pos END AS address_country_pos,
       timezone, CASE WHEN timezone IS NOT NULL THEN received_at END AS timezone_at, CASE WHEN timezone IS NOT NULL THEN pos END AS timezone_pos
  FROM (SELECT org, email, event_name, received_at, event_time, properties, log_position(log_seq, log_index) AS pos,
               -- Segment's reserved traits are camel case; its SDKs' users send snake case as often.
               coalesce(json_extract_string(traits_raw, '$.traits.firstName'), json_extract_string(traits_raw, '$.traits.first_name')) AS first_name,
               coalesce(json_extract_string(traits_raw, '$.traits.lastName'), json_extract_string(traits_raw, '$.traits.last_name')) AS last_name,
               CASE WHEN traits_raw IS NOT NULL THEN user_id END AS user_id,
               json_extract_string(traits_raw, '$.traits.address.city') AS address_city,
               json_extract_string(traits_raw, '$.traits.address.state') AS address_state,
               json_extract_string(traits_raw, '$.traits.address.country') AS address_country,
               -- Any event's context.timezone (analytics.js sets it), or traits.timezone of an identify; the
               -- word looked for first, so events without it are not parsed (most, without analytics.js).
               CASE WHEN contains(raw::VARCHAR, '"timezone"')
                    THEN coalesce(json_extract_string(traits_raw, '$.traits.timezone'), json_extract_string(raw, '$.context.timezone')) END AS timezone
          FROM (SELECT *, CASE WHEN event_name IN ('identify', 'registration') THEN raw END AS traits_raw
                  FROM events
                 WHERE environment = 'production' AND email IS NOT NULL AND (after IS NULL OR visible_at > after)
                   AND (emails IS NULL OR email IN (SELECT unnest(emails)))));

-- The orders of the same events, in the shape of contact_orders.
CREATE OR REPLACE MACRO event_orders(after) AS TABLE
SELECT org, email, coalesce(json_extract_string(properties, '$.transactionId'), message_id) AS order_key
  FROM events
 WHERE environment = 'production' AND email IS NOT NULL AND event_name = 'complete_transaction'
   AND (after IS NULL OR visible_at > after);

-- Where the fold stands (NULL before the first). Callers that want the unfolded events read through
-- zone maps pass this as a value they read first, in the same transaction: as a subquery inside a
-- query it is correct but makes the events scan read every row.
CREATE OR REPLACE MACRO folded_through() AS (SELECT max(through) FROM contact_activity_folded);

-- The current aggregates of some contacts (all when org_slug or emails is NULL): the folded rows
-- combined with the events after folded. Combining is associative, so folding never changes a result.
CREATE OR REPLACE MACRO activity_of(org_slug, emails, folded) AS TABLE
SELECT org, email,
       min(first_seen_at) AS first_seen_at,
       max(last_seen_at) AS last_seen_at,
       sum(revenue) AS revenue,
       max(last_purchase_at) AS last_purchase_at,
       arg_max(first_name, observed(first_name_at, first_name_pos)) AS first_name, max(first_name_at) AS first_name_at,
       arg_max(coalesce(first_name_pos, 0), observed(first_name_at, first_name_pos)) AS first_name_pos,
       arg_max(last_name, observed(last_name_at, last_name_pos)) AS last_name, max(last_name_at) AS last_name_at,
       arg_max(coalesce(last_name_pos, 0), observed(last_name_at, last_name_pos)) AS last_name_pos,
       arg_max(user_id, observed(user_id_at, user_id_pos)) AS user_id, max(user_id_at) AS user_id_at,
       arg_max(coalesce(user_id_pos, 0), observed(user_id_at, user_id_pos)) AS user_id_pos,
       arg_max(address_city, observed(address_city_at, address_city_pos)) AS address_city, max(address_city_at) AS address_city_at,
       arg_max(coalesce(address_city_pos, 0), observed(address_city_at, address_city_pos)) AS address_city_pos,
       arg_max(address_state, observed(address_state_at, address_state_pos)) AS address_state, max(address_state_at) AS address_state_at,
       arg_max(coalesce(address_state_pos, 0), observed(address_state_at, address_state_pos)) AS address_state_pos,
       arg_max(address_country, observed(address_country_at, address_country_pos)) AS address_country, max(address_country_at) AS address_country_at,
       arg_max(coalesce(address_country_pos, 0), observed(address_country_at, address_country_pos)) AS address_country_pos,
       arg_max(timezone, observed(timezone_at, timezone_pos)) AS timezone, max(timezone_at) AS timezone_at,
       arg_max(coalesce(timezone_pos, 0), observed(timezone_at, timezone_pos)) AS timezone_pos
  FROM (SELECT * FROM contact_activity WHERE emails IS NULL OR email IN (SELECT unnest(emails))
        UNION ALL BY NAME
        SELECT * FROM event_activity(folded, emails))
 WHERE org_slug IS NULL OR org = org_slug
 GROUP BY org, email;

-- The distinct orders of some contacts, folded and not yet folded.
CREATE OR REPLACE MACRO orders_of(org_slug, emails, folded) AS TABLE
SELECT org, email, order_key FROM contact_orders
 WHERE (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails)))
UNION
SELECT org, email, order_key FROM event_orders(folded)
 WHERE (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails)));

-- Of two observations of one field, the newer non-null value.
CREATE OR REPLACE MACRO latest_value(old, old_at, new, new_at) AS
  CASE WHEN new IS NOT NULL AND (old IS NULL OR new_at >= old_at) THEN new ELSE old END;

-- profiles_for(org_slug, emails, folded) computes the rows of some contacts (the filter reaches every
-- source scan), folded being folded_through(); the view profiles (org_relations.sql) is every contact.
CREATE OR REPLACE MACRO profiles_for(org_slug, emails, folded) AS TABLE
WITH scoped_contacts AS (
  SELECT * FROM contacts
   WHERE (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails)))
),
scoped_activity AS (
  SELECT * FROM activity_of(org_slug, emails, folded)
),
orders AS (
  SELECT org, email, count(*) AS order_count FROM orders_of(org_slug, emails, folded) GROUP BY org, email
),
sends AS (
  SELECT org, email,
         list(DISTINCT flow_id ORDER BY flow_id) FILTER (WHERE flow_id IS NOT NULL) AS campaigns_received,
         list(DISTINCT membership ORDER BY membership) AS flow_variant_membership
    FROM (SELECT org, email,
                 CASE WHEN status = 'delivered' THEN flow_id END AS flow_id,
                 CASE WHEN variant IS NULL THEN flow_id ELSE flow_id || '-' || variant END AS membership
            FROM flow_sends
           WHERE status IN ('delivered', 'holdout')
             AND (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails))))
   GROUP BY org, email
),
traits AS (
  SELECT org, email, json_group_object(name, value) AS traits
    FROM contact_traits
   WHERE (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails)))
   GROUP BY org, email
),
contact_keys AS (
  SELECT org, email FROM scoped_contacts
  UNION
  SELECT org, email FROM scoped_activity
)
SELECT k.org,
       k.email AS email_address,
       latest_value(c.first_name, c.updated_at, a.first_name, a.first_name_at) AS first_name,
       latest_value(c.last_name, c.updated_at, a.last_name, a.last_name_at) AS last_name,
       latest_value(c.user_id, c.updated_at, a.user_id, a.user_id_at) AS user_id,
       latest_value(c.address_city, c.updated_at, a.address_city, a.address_city_at) AS address_city,
       latest_value(c.address_state, c.updated_at, a.address_state, a.address_state_at) AS address_state,
       latest_value(c.address_country, c.updated_at, a.address_country, a.address_country_at) AS address_country,
       coalesce(s.campaigns_received, []) AS campaigns_received,
       coalesce(s.flow_variant_membership, []) AS flow_variant_membership,
       round(coalesce(a.revenue, 0), 2) AS total_lifetime_value,
       org.currency_symbol || printf('%.2f', coalesce(a.revenue, 0)) AS total_lifetime_value_jde,
       -- The UTC date from the microseconds: `AT TIME ZONE 'UTC'` gives the same and asks ICU for each row.
       strftime(make_timestamp(epoch_us(a.last_purchase_at)), '%Y-%m-%d') AS last_purchase_date,
       coalesce(o.order_count, 0) AS order_count,
       a.first_seen_at,
       a.last_seen_at,
       -- Not a default content field: quiet hours read it (an org may serve it as a content field).
       latest_value(json_extract_string(c.custom, '$.timezone'), c.updated_at, a.timezone, a.timezone_at) AS timezone,
       -- Traits written in SQL are custom fields too, over an imported column of the same name.
       CASE WHEN t.traits IS NULL THEN c.custom ELSE json_merge_patch(coalesce(c.custom, '{}'), t.traits) END AS custom_fields
  FROM contact_keys k
  JOIN org_settings org ON org.org = k.org
  LEFT JOIN scoped_contacts c ON c.org = k.org AND c.email = k.email
  LEFT JOIN scoped_activity a ON a.org = k.org AND a.email = k.email
  LEFT JOIN orders o ON o.org = k.org AND o.email = k.email
  LEFT JOIN sends s ON s.org = k.org AND s.email = k.email
  LEFT JOIN traits t ON t.org = k.org AND t.email = k.email;

-- The e-mail of every contact profiles_for computes a row for (contact_keys above, unscoped): imported,
-- or with a production event, folded or not. A whole-org refresh reads their profiles a page at a time.
CREATE OR REPLACE MACRO contact_emails(folded) AS TABLE
SELECT email FROM contacts
UNION
SELECT email FROM contact_activity
UNION
SELECT email FROM event_activity(folded, NULL::VARCHAR[]);
