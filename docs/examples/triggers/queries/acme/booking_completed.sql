-- Every completed booking, once per event.
SELECT identity, identity_type, ts, event_type, event_id, event_raw,
       event_raw:properties:properties:city::string AS city
FROM acme.event_triggers
WHERE event_type = 'custom_booking_completed'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}
