-- One sample row behind each relation trigger and segment SQL reads, in the in-memory databases where
-- SQL is checked (src/reactions/triggers/sql-check-process.ts), never in an org's own database. A checked query
-- is run once over them: what a row costs it (a huge constant, a quadratic string function) is then
-- paid in the checker, within the org's memory share and the check's deadline, not by the storage
-- process every org shares. $org is the org's slug, $now the check's time.
INSERT INTO events (org, environment, message_id, event_type, event_name, client_id, email, user_id, received_at, event_time, visible_at, properties, raw, log_seq)
VALUES ($org, 'production', 'sample-message-id', 'track', 'custom_sample_event', 'sample-client', 'sample@example.com', 'sample-user',
        $now, $now, $now, '{"city":"Lisbon","nights":3}',
        '{"type":"track","event":"custom","clientId":"sample-client","sentAt":0,"messageId":"sample-message-id","properties":{"eventName":"sample_event","properties":{"city":"Lisbon","nights":3}},"traits":{"email":"sample@example.com"}}',
        1);

INSERT INTO contacts (org, email, first_name, last_name, user_id, address_city, address_state, address_country, custom, updated_at)
VALUES ($org, 'sample@example.com', 'Sam', 'Sample', 'sample-user', 'Lisbon', NULL, 'PT', '{}', $now);

INSERT INTO org_settings (org, currency_symbol) VALUES ($org, '$');
