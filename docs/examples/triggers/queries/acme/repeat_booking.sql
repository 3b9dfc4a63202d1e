-- A booking by a contact who booked before, within 30 days: the look-back reads earlier events in a
-- subquery and leaves the window as it is.
SELECT identity, identity_type, ts, event_type, event_id, event_raw
FROM event_triggers t
WHERE event_type = 'custom_booking_completed'
  AND ts > {cursor_start_time} AND ts <= {cursor_end_time}
  AND EXISTS (SELECT 1 FROM event_triggers e
               WHERE e.identity = t.identity AND e.event_type = 'custom_booking_completed'
                 AND e.event_time < t.event_time AND e.event_time > t.event_time - INTERVAL 30 DAY)
