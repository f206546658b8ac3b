-- The webhook pipeline's archive (sql/migrations/0017_arquivo_do_pipeline.sql;
-- docs/decisions/0022-webhook-history-in-a-daily-archive.md): what has ended moves from the
-- working tables (outbox, deliveries,
-- delivery_attempts) to their archives, partitioned by day; a replay moves an event back; and the
-- views that read both, for everything that reads history (the API's event log, operators).
--
-- One archiver runs at a time (an advisory lock it tries, and skips its pass when another holds it);
-- a replay holds the same lock shared while it restores an event and makes its deliveries due, so
-- the archiver never moves a delivery a replay is bringing back.

CREATE FUNCTION archive_lock() RETURNS bigint LANGUAGE sql IMMUTABLE AS $$ SELECT 7410203007::bigint $$;

-- Moves up to p_limit deliveries that ended before p_before (oldest end first) with their attempts to the archive, and
-- each event this leaves with no delivery in the working table (its last delivery ended) with them.
-- A delivery's row, and an event's, is deleted from the working table (its attempts by cascade)
-- and written to the archive in the same statement. locked is false when another archiver holds
-- the lock, or a replay is under way: nothing was moved.
CREATE FUNCTION archive_ended_deliveries(p_before timestamptz, p_limit int, OUT locked boolean, OUT deliveries int, OUT events int)
LANGUAGE plpgsql AS $$
BEGIN
  locked := pg_try_advisory_xact_lock(archive_lock());
  deliveries := 0;
  events := 0;
  IF NOT locked THEN
    RETURN;
  END IF;
  WITH ended AS MATERIALIZED (
    SELECT d.conta_id, d.id FROM deliveries d
     WHERE d.completed_at < p_before
     ORDER BY d.completed_at LIMIT p_limit
       FOR UPDATE SKIP LOCKED
  ), moved AS MATERIALIZED (
    DELETE FROM deliveries d USING ended x
     WHERE d.conta_id = x.conta_id AND d.id = x.id AND d.completed_at IS NOT NULL
    RETURNING d.*
  ), deliveries_out AS (
    INSERT INTO deliveries_archive (conta_id, id, event_id, endpoint_id, status, attempts, run_attempts, next_attempt_at,
                                    last_attempt_at, last_error, created_at, completed_at, encerrado_em)
    SELECT m.conta_id, m.id, m.event_id, m.endpoint_id, m.status, m.attempts, m.run_attempts, m.next_attempt_at,
           m.last_attempt_at, m.last_error, m.created_at, m.completed_at, m.completed_at
      FROM moved m
  ), attempts_out AS (
    INSERT INTO delivery_attempts_archive (conta_id, delivery_id, attempt, started_at, duration_ms, succeeded,
                                           response_status, response_body, error, encerrado_em)
    SELECT a.conta_id, a.delivery_id, a.attempt, a.started_at, a.duration_ms, a.succeeded,
           a.response_status, a.response_body, a.error, m.completed_at
      FROM moved m JOIN delivery_attempts a ON a.conta_id = m.conta_id AND a.delivery_id = m.id
  ), freed AS MATERIALIZED (
    -- Events with no delivery left in the working table once these are gone (the statement still
    -- sees the deliveries it deletes).
    SELECT m.conta_id, m.event_id, max(m.completed_at) AS ended FROM moved m
     WHERE NOT EXISTS (SELECT FROM deliveries d
                        WHERE d.conta_id = m.conta_id AND d.event_id = m.event_id
                          AND NOT EXISTS (SELECT FROM moved x WHERE x.conta_id = d.conta_id AND x.id = d.id))
     GROUP BY m.conta_id, m.event_id
  ), events_out AS (
    DELETE FROM outbox o USING freed f
     WHERE o.conta_id = f.conta_id AND o.id = f.event_id AND o.relayed_at IS NOT NULL
    RETURNING o.*, greatest(o.relayed_at, f.ended) AS encerrado_em
  ), events_in AS (
    INSERT INTO outbox_archive (conta_id, id, seq, tipo, dados, endpoint_id, group_key, available_at, relayed_at, criado_em, encerrado_em)
    SELECT conta_id, id, seq, tipo, dados, endpoint_id, group_key, available_at, relayed_at, criado_em, encerrado_em FROM events_out
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM moved)::int, (SELECT count(*) FROM events_in)::int INTO deliveries, events;
END $$;

-- Moves relayed events with no delivery in the working table (none was due to anyone, or all have
-- been archived), scanning up to p_limit events relayed after (p_after_at, p_after_seq) and before
-- p_before, in relay order. Returns where the scan stopped, for the next call to go on from: an
-- event skipped there (a delivery of it still pending) leaves with its last delivery
-- (archive_ended_deliveries), so no pass reads it again.
CREATE FUNCTION archive_relayed_events(p_after_at timestamptz, p_after_seq bigint, p_before timestamptz, p_limit int,
                                       OUT locked boolean, OUT scanned int, OUT events int,
                                       OUT last_at timestamptz, OUT last_seq bigint)
LANGUAGE plpgsql AS $$
BEGIN
  locked := pg_try_advisory_xact_lock(archive_lock());
  scanned := 0;
  events := 0;
  last_at := p_after_at;
  last_seq := p_after_seq;
  IF NOT locked THEN
    RETURN;
  END IF;
  WITH seen AS MATERIALIZED (
    SELECT o.conta_id, o.id, o.relayed_at, o.seq FROM outbox o
     WHERE o.relayed_at IS NOT NULL AND (o.relayed_at, o.seq) > (p_after_at, p_after_seq) AND o.relayed_at < p_before
     ORDER BY o.relayed_at, o.seq LIMIT p_limit
  ), events_out AS (
    DELETE FROM outbox o USING seen s
     WHERE o.conta_id = s.conta_id AND o.id = s.id
       AND NOT EXISTS (SELECT FROM deliveries d WHERE d.conta_id = o.conta_id AND d.event_id = o.id)
    RETURNING o.*
  ), events_in AS (
    INSERT INTO outbox_archive (conta_id, id, seq, tipo, dados, endpoint_id, group_key, available_at, relayed_at, criado_em, encerrado_em)
    SELECT conta_id, id, seq, tipo, dados, endpoint_id, group_key, available_at, relayed_at, criado_em, relayed_at FROM events_out
    RETURNING 1
  ), last AS (
    SELECT s.relayed_at, s.seq FROM seen s ORDER BY s.relayed_at DESC, s.seq DESC LIMIT 1
  )
  SELECT (SELECT count(*) FROM seen)::int, (SELECT count(*) FROM events_in)::int,
         coalesce((SELECT relayed_at FROM last), p_after_at), coalesce((SELECT seq FROM last), p_after_seq)
    INTO scanned, events, last_at, last_seq;
END $$;

-- Brings an archived event back to the working tables, with all its archived deliveries and their
-- attempts, so a replay finds them where the pipeline works (shared/db/outbox.ts, replayEvent);
-- true when anything moved. Deliveries to an endpoint deleted since stay out and are dropped, as
-- the working table's cascade would have done; so is an event for one endpoint only
-- (webhook.teste) whose endpoint is gone. The caller's transaction holds the archiver off until it
-- commits (the lock shared); what the replay leaves ended is archived again by a later pass.
CREATE FUNCTION restore_event(p_conta_id uuid, p_event_id uuid) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_eventos int;
  v_entregas int;
BEGIN
  PERFORM pg_advisory_xact_lock_shared(archive_lock());
  WITH m AS (
    DELETE FROM outbox_archive WHERE conta_id = p_conta_id AND id = p_event_id RETURNING *
  )
  INSERT INTO outbox (conta_id, id, seq, tipo, dados, endpoint_id, group_key, available_at, relayed_at, criado_em)
  OVERRIDING SYSTEM VALUE
  SELECT m.conta_id, m.id, m.seq, m.tipo, m.dados, m.endpoint_id, m.group_key, m.available_at, m.relayed_at, m.criado_em
    FROM m
   WHERE m.endpoint_id IS NULL OR EXISTS (SELECT FROM webhook_endpoints e WHERE e.conta_id = m.conta_id AND e.id = m.endpoint_id);
  GET DIAGNOSTICS v_eventos = ROW_COUNT;
  WITH m AS (
    DELETE FROM deliveries_archive WHERE conta_id = p_conta_id AND event_id = p_event_id RETURNING *
  )
  INSERT INTO deliveries (conta_id, id, event_id, endpoint_id, status, attempts, run_attempts, next_attempt_at,
                          last_attempt_at, last_error, created_at, completed_at)
  SELECT m.conta_id, m.id, m.event_id, m.endpoint_id, m.status, m.attempts, m.run_attempts, m.next_attempt_at,
         m.last_attempt_at, m.last_error, m.created_at, m.completed_at
    FROM m
   WHERE EXISTS (SELECT FROM outbox o WHERE o.conta_id = m.conta_id AND o.id = m.event_id)
     AND EXISTS (SELECT FROM webhook_endpoints e WHERE e.conta_id = m.conta_id AND e.id = m.endpoint_id);
  GET DIAGNOSTICS v_entregas = ROW_COUNT;
  WITH m AS (
    -- The attempts of the deliveries just brought back (this statement sees them).
    DELETE FROM delivery_attempts_archive a USING deliveries d
     WHERE d.conta_id = p_conta_id AND d.event_id = p_event_id AND a.conta_id = d.conta_id AND a.delivery_id = d.id
    RETURNING a.*
  )
  INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at, duration_ms, succeeded,
                                 response_status, response_body, error)
  SELECT m.conta_id, m.delivery_id, m.attempt, m.started_at, m.duration_ms, m.succeeded, m.response_status, m.response_body, m.error
    FROM m;
  RETURN v_eventos + v_entregas > 0;
END $$;

-- History reads both tables of each pair. An archived event for one endpoint (webhook.teste) is
-- hidden once that endpoint is deleted, as the working table's cascade would have removed it.
CREATE VIEW eventos AS
SELECT o.conta_id, o.id, o.seq, o.tipo, o.dados, o.endpoint_id, o.group_key, o.available_at, o.relayed_at, o.criado_em
  FROM outbox o
UNION ALL
SELECT a.conta_id, a.id, a.seq, a.tipo, a.dados, a.endpoint_id, a.group_key, a.available_at, a.relayed_at, a.criado_em
  FROM outbox_archive a
 WHERE a.endpoint_id IS NULL OR EXISTS (SELECT FROM webhook_endpoints e WHERE e.conta_id = a.conta_id AND e.id = a.endpoint_id);

CREATE VIEW all_deliveries AS
SELECT d.conta_id, d.id, d.event_id, d.endpoint_id, d.status, d.attempts, d.run_attempts, d.next_attempt_at, d.lease_id,
       d.last_attempt_at, d.last_error, d.created_at, d.completed_at
  FROM deliveries d
UNION ALL
SELECT a.conta_id, a.id, a.event_id, a.endpoint_id, a.status, a.attempts, a.run_attempts, a.next_attempt_at, NULL::uuid,
       a.last_attempt_at, a.last_error, a.created_at, a.completed_at
  FROM deliveries_archive a;

CREATE VIEW all_delivery_attempts AS
SELECT t.conta_id, t.delivery_id, t.attempt, t.started_at, t.duration_ms, t.succeeded, t.response_status, t.response_body, t.error
  FROM delivery_attempts t
UNION ALL
SELECT a.conta_id, a.delivery_id, a.attempt, a.started_at, a.duration_ms, a.succeeded, a.response_status, a.response_body, a.error
  FROM delivery_attempts_archive a;
