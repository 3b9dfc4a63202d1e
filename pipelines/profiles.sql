-- The contact profile (SPEC 6.1): one row per (org, contact e-mail).
-- Applied at start by src/db/migrate.ts. Served from memory: src/profiles/ materializes the rows of
-- contacts that changed after each compaction batch, so a lookup never scans events.
-- profiles_for(org_slug, emails) computes the rows of some contacts (the filter reaches every source
-- scan, so a refresh never aggregates all events), and the view profiles is every contact.
-- Sources: imported contacts, identify and registration traits (per field, the latest observation
-- wins), complete_transaction events, flow sends (delivered sends are campaigns received, and delivered
-- and holdout sends give flow_variant_membership). Only production events shape profiles.

CREATE OR REPLACE MACRO profiles_for(org_slug, emails) AS TABLE
WITH scoped_contacts AS (
  SELECT * FROM contacts
   WHERE (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails)))
),
scoped_events AS (
  SELECT * FROM events
   WHERE environment = 'production' AND email IS NOT NULL
     AND (org_slug IS NULL OR org = org_slug) AND (emails IS NULL OR email IN (SELECT unnest(emails)))
),
observations AS (
  SELECT org, email, first_name, last_name, user_id, address_city, address_state, address_country,
         updated_at AS observed_at
    FROM scoped_contacts
  UNION ALL
  SELECT org, email,
         json_extract_string(raw, '$.traits.firstName'),
         json_extract_string(raw, '$.traits.lastName'),
         user_id,
         json_extract_string(raw, '$.traits.address.city'),
         json_extract_string(raw, '$.traits.address.state'),
         json_extract_string(raw, '$.traits.address.country'),
         received_at
    FROM scoped_events
   WHERE event_name IN ('identify', 'registration')
),
traits AS (
  SELECT org, email,
         arg_max(first_name, observed_at) FILTER (WHERE first_name IS NOT NULL) AS first_name,
         arg_max(last_name, observed_at) FILTER (WHERE last_name IS NOT NULL) AS last_name,
         arg_max(user_id, observed_at) FILTER (WHERE user_id IS NOT NULL) AS user_id,
         arg_max(address_city, observed_at) FILTER (WHERE address_city IS NOT NULL) AS address_city,
         arg_max(address_state, observed_at) FILTER (WHERE address_state IS NOT NULL) AS address_state,
         arg_max(address_country, observed_at) FILTER (WHERE address_country IS NOT NULL) AS address_country
    FROM observations
   GROUP BY org, email
),
activity AS (
  SELECT org, email, min(received_at) AS first_seen_at, max(received_at) AS last_seen_at,
         sum(TRY_CAST(json_extract(properties, '$.revenue') AS DOUBLE))
           FILTER (WHERE event_name = 'complete_transaction') AS revenue,
         max(event_time) FILTER (WHERE event_name = 'complete_transaction') AS last_purchase_at,
         count(DISTINCT coalesce(json_extract_string(properties, '$.transactionId'), message_id))
           FILTER (WHERE event_name = 'complete_transaction') AS order_count
    FROM scoped_events
   GROUP BY org, email
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
contact_keys AS (
  SELECT org, email FROM traits
  UNION
  SELECT org, email FROM activity
)
SELECT k.org,
       k.email AS email_address,
       t.first_name, t.last_name, t.user_id, t.address_city, t.address_state, t.address_country,
       coalesce(s.campaigns_received, []) AS campaigns_received,
       coalesce(s.flow_variant_membership, []) AS flow_variant_membership,
       round(coalesce(a.revenue, 0), 2) AS total_lifetime_value,
       o.currency_symbol || printf('%.2f', coalesce(a.revenue, 0)) AS total_lifetime_value_jde,
       strftime(a.last_purchase_at AT TIME ZONE 'UTC', '%Y-%m-%d') AS last_purchase_date,
       coalesce(a.order_count, 0) AS order_count,
       a.first_seen_at,
       a.last_seen_at,
       c.custom AS custom_fields
  FROM contact_keys k
  JOIN orgs o ON o.slug = k.org
  LEFT JOIN traits t ON t.org = k.org AND t.email = k.email
  LEFT JOIN activity a ON a.org = k.org AND a.email = k.email
  LEFT JOIN sends s ON s.org = k.org AND s.email = k.email
  LEFT JOIN scoped_contacts c ON c.org = k.org AND c.email = k.email;

CREATE OR REPLACE VIEW profiles AS SELECT * FROM profiles_for(NULL::VARCHAR, NULL::VARCHAR[]);
