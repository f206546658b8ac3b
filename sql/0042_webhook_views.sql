-- Operator views over the webhook tables (DESIGN §13): pending and failed deliveries with their last
-- attempt, queue depth per queue, and endpoints near their caps. Read-only; plain names.

CREATE VIEW webhook_deliveries_pending AS
SELECT d.conta_id, d.id AS delivery_id, d.event_id, o.tipo, d.endpoint_id, e.url,
       d.attempts, d.run_attempts, d.next_attempt_at, d.job_id IS NOT NULL AS enqueued,
       d.created_at, now() - d.created_at AS age,
       a.response_status AS last_response_status, a.error AS last_error, a.started_at AS last_attempt_at
  FROM deliveries d
  JOIN outbox o ON o.conta_id = d.conta_id AND o.id = d.event_id
  JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
  LEFT JOIN LATERAL (
    SELECT response_status, error, started_at FROM delivery_attempts
     WHERE conta_id = d.conta_id AND delivery_id = d.id ORDER BY attempt DESC LIMIT 1) a ON true
 WHERE d.status = 'pending';

CREATE VIEW webhook_deliveries_failed AS
SELECT d.conta_id, d.id AS delivery_id, d.event_id, o.tipo, d.endpoint_id, e.url, e.ativo AS endpoint_active,
       d.attempts, d.created_at, d.completed_at AS failed_at,
       a.response_status AS last_response_status, coalesce(a.error, d.last_error) AS last_error
  FROM deliveries d
  JOIN outbox o ON o.conta_id = d.conta_id AND o.id = d.event_id
  JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
  LEFT JOIN LATERAL (
    SELECT response_status, error FROM delivery_attempts
     WHERE conta_id = d.conta_id AND delivery_id = d.id ORDER BY attempt DESC LIMIT 1) a ON true
 WHERE d.status = 'failed';

-- Work waiting at each stage: events not yet relayed (and those held by a grouping window),
-- deliveries waiting for their next attempt or for a job, and pg-boss jobs per queue and state.
-- pg-boss installs its schema after the migrations run, so its table is read only when present.
CREATE FUNCTION queue_depth_rows() RETURNS TABLE (queue text, state text, items bigint, oldest timestamptz)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN QUERY
    SELECT 'outbox', CASE WHEN o.available_at <= now() THEN 'ready' ELSE 'grouping' END, count(*), min(o.criado_em)
      FROM outbox o WHERE o.relayed_at IS NULL GROUP BY 2;
  RETURN QUERY
    SELECT 'deliveries', CASE WHEN d.job_id IS NOT NULL THEN 'enqueued'
                              WHEN d.next_attempt_at <= now() THEN 'due' ELSE 'scheduled' END,
           count(*), min(d.next_attempt_at)
      FROM deliveries d WHERE d.status = 'pending' GROUP BY 2;
  IF to_regclass('pgboss.job') IS NOT NULL THEN
    RETURN QUERY EXECUTE
      'SELECT name::text, state::text, count(*), min(created_on) FROM pgboss.job
        WHERE state < ''completed'' GROUP BY name, state';
  END IF;
END $$;

CREATE VIEW queue_depth AS SELECT * FROM queue_depth_rows() ORDER BY queue, state;

-- Active endpoints whose account is at 80 % or more of a webhook ceiling of its plan (endpoints,
-- deliveries this hour), or that have been failing for a day or more (disabled after 5 days).
CREATE VIEW webhook_endpoints_near_caps AS
WITH uso AS (
  SELECT conta_id, entregas FROM webhook_uso_por_hora WHERE hora = date_trunc('hour', now(), 'UTC')
), ativos AS (
  SELECT conta_id, count(*) AS ativos FROM webhook_endpoints WHERE ativo GROUP BY conta_id
), linhas AS (
  SELECT e.conta_id, e.id AS endpoint_id, e.url, c.plano_id,
         a.ativos AS endpoints_active, p.webhook_endpoints AS endpoints_allowed,
         coalesce(u.entregas, 0) AS deliveries_this_hour, p.entregas_webhook_por_hora AS deliveries_per_hour,
         e.falhando_desde AS failing_since,
         e.falhando_desde + interval '5 days' AS disabled_after
    FROM webhook_endpoints e
    JOIN contas c ON c.id = e.conta_id
    JOIN planos p ON p.id = c.plano_id
    JOIN ativos a ON a.conta_id = e.conta_id
    LEFT JOIN uso u ON u.conta_id = e.conta_id
   WHERE e.ativo
)
SELECT *, array_remove(ARRAY[
         CASE WHEN endpoints_active * 10 >= endpoints_allowed * 8 THEN 'endpoints' END,
         CASE WHEN deliveries_this_hour * 10 >= deliveries_per_hour * 8 THEN 'deliveries_per_hour' END,
         CASE WHEN failing_since <= now() - interval '1 day' THEN 'failing' END], NULL) AS reasons
  FROM linhas
 WHERE endpoints_active * 10 >= endpoints_allowed * 8
    OR deliveries_this_hour * 10 >= deliveries_per_hour * 8
    OR failing_since <= now() - interval '1 day';
