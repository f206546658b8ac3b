-- Operator views (docs/decisions/0023-operator-views.md), read-only, by plain names (README,
-- "Operator views"): pending and failed deliveries with their last attempt, queue depth per queue,
-- endpoints near their caps and each endpoint's deliveries this hour; every key's use of its
-- ceilings, the keys near one, the keys suspended; the requests of the last hour. Failed deliveries
-- and the hour's attempts are read through the views over the pipeline's working tables and archive
-- (sql/code/archive.sql).

CREATE VIEW webhook_deliveries_pending AS
SELECT d.conta_id, d.id AS delivery_id, d.event_id, o.tipo, d.endpoint_id, e.url,
       d.attempts, d.run_attempts, d.next_attempt_at, d.lease_id IS NOT NULL AND d.next_attempt_at > now() AS leased,
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
  FROM all_deliveries d
  JOIN eventos o ON o.conta_id = d.conta_id AND o.id = d.event_id
  JOIN webhook_endpoints e ON e.conta_id = d.conta_id AND e.id = d.endpoint_id
  LEFT JOIN LATERAL (
    SELECT response_status, error FROM all_delivery_attempts
     WHERE conta_id = d.conta_id AND delivery_id = d.id ORDER BY attempt DESC LIMIT 1) a ON true
 WHERE d.status = 'failed';

-- Work waiting at each stage: events not yet relayed (and those held by a grouping window),
-- deliveries due, under a worker's lease (being sent) or scheduled for a later attempt, and pg-boss
-- jobs per queue and state.
-- pg-boss installs its schema after the migrations run, so its table is read only when present.
CREATE FUNCTION queue_depth_rows() RETURNS TABLE (queue text, state text, items bigint, oldest timestamptz)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN QUERY
    SELECT 'outbox', CASE WHEN o.available_at <= now() THEN 'ready' ELSE 'grouping' END, count(*), min(o.criado_em)
      FROM outbox o WHERE o.relayed_at IS NULL GROUP BY 2;
  RETURN QUERY
    SELECT 'deliveries', CASE WHEN d.next_attempt_at <= now() THEN 'due'
                              WHEN d.lease_id IS NOT NULL THEN 'leased' ELSE 'scheduled' END,
           count(*), min(d.next_attempt_at)
      FROM deliveries d WHERE d.status = 'pending' GROUP BY 2;
  IF to_regclass('pgboss.job') IS NOT NULL THEN
    RETURN QUERY
      SELECT j.name::text, j.state::text, count(*), min(j.created_on) FROM pgboss.job j
       WHERE j.state < 'completed' GROUP BY j.name, j.state;
  END IF;
END $$;
CREATE VIEW queue_depth AS SELECT * FROM queue_depth_rows() ORDER BY queue, state;

-- Active endpoints whose account is at 80 % or more of a webhook ceiling of its plan (endpoints,
-- deliveries this hour), or that have been failing for a day or more (disabled after 5 days).
CREATE VIEW webhook_endpoints_near_caps AS
WITH hourly AS (
  SELECT conta_id, deliveries FROM webhook_hourly_usage WHERE hour = date_trunc('hour', now(), 'UTC')
), active AS (
  SELECT conta_id, count(*) AS active FROM webhook_endpoints WHERE ativo GROUP BY conta_id
), endpoint_rows AS (
  SELECT e.conta_id, e.id AS endpoint_id, e.url, c.plano_id,
         a.active AS endpoints_active, p.webhook_endpoints AS endpoints_allowed,
         coalesce(u.deliveries, 0) AS deliveries_this_hour, p.entregas_webhook_por_hora AS deliveries_per_hour,
         e.falhando_desde AS failing_since,
         e.falhando_desde + interval '5 days' AS disabled_after
    FROM webhook_endpoints e
    JOIN contas c ON c.id = e.conta_id
    JOIN planos p ON p.id = c.plano_id
    JOIN active a ON a.conta_id = e.conta_id
    LEFT JOIN hourly u ON u.conta_id = e.conta_id
   WHERE e.ativo
)
SELECT *, array_remove(ARRAY[
         CASE WHEN endpoints_active * 10 >= endpoints_allowed * 8 THEN 'endpoints' END,
         CASE WHEN deliveries_this_hour * 10 >= deliveries_per_hour * 8 THEN 'deliveries_per_hour' END,
         CASE WHEN failing_since <= now() - interval '1 day' THEN 'failing' END], NULL) AS reasons
  FROM endpoint_rows
 WHERE endpoints_active * 10 >= endpoints_allowed * 8
    OR deliveries_this_hour * 10 >= deliveries_per_hour * 8
    OR failing_since <= now() - interval '1 day';

-- Every active key with what it has used of each ceiling of its plan now (contract §8.1), computed
-- as admission computes it (the bucket refilled to now, the current minute's windows, the calls of
-- the month net of the advance, the slots of live processes); near: the ceilings at 80 % or more,
-- at_ceiling: those with no room left for one more unit. Names in the arrays are planos' columns.
CREATE VIEW api_key_usage AS
WITH usage AS (
  SELECT k.conta_id, k.id AS chave_id, k.prefixo, k.nome, c.plano_id,
         floor(admission_tokens(b.tokens, b.refreshed_at, p.rajada, p.rajada_recarga_por_segundo, now()))::int AS burst_tokens_left,
         p.rajada AS burst_size,
         coalesce(l.used, 0) AS reads_this_minute, p.leituras_por_minuto AS reads_per_minute,
         coalesce(e.used, 0) AS writes_this_minute, p.escritas_por_minuto AS writes_per_minute,
         coalesce(m.calls, 0) AS calls_this_month, p.chamadas_por_mes AS calls_per_month,
         s.key_in_flight, p.simultaneas_por_chave AS key_concurrency,
         s.account_in_flight, p.simultaneas_por_conta AS account_concurrency
    FROM chaves_api k
    JOIN contas c ON c.id = k.conta_id
    JOIN planos p ON p.id = c.plano_id
    LEFT JOIN rate_buckets b ON b.chave_id = k.id
    -- A window older than the current minute counts nothing (admission starts it again).
    LEFT JOIN minute_windows l ON l.conta_id = k.conta_id AND l.classe = 'leitura' AND l.window_start >= admission_window(now())
    LEFT JOIN minute_windows e ON e.conta_id = k.conta_id AND e.classe = 'escrita' AND e.window_start >= admission_window(now())
    LEFT JOIN effective_monthly_usage m ON m.conta_id = k.conta_id AND m.month = admission_month(now())
    CROSS JOIN LATERAL (
      SELECT coalesce(sum(r.in_flight) FILTER (WHERE r.chave_id = k.id), 0)::int AS key_in_flight,
             coalesce(sum(r.in_flight), 0)::int AS account_in_flight
        FROM request_slots r WHERE r.conta_id = k.conta_id AND r.expires_at > now()) s
   WHERE k.revogada_em IS NULL AND (k.expira_em IS NULL OR k.expira_em > now())
)
SELECT *,
       array_remove(ARRAY[
         CASE WHEN (burst_size - burst_tokens_left) * 10 >= burst_size * 8 THEN 'rajada' END,
         CASE WHEN reads_this_minute * 10 >= reads_per_minute * 8 THEN 'leituras_por_minuto' END,
         CASE WHEN writes_this_minute * 10 >= writes_per_minute * 8 THEN 'escritas_por_minuto' END,
         CASE WHEN calls_this_month::bigint * 10 >= calls_per_month::bigint * 8 THEN 'chamadas_por_mes' END,
         CASE WHEN key_in_flight * 10 >= key_concurrency * 8 THEN 'simultaneas_por_chave' END,
         CASE WHEN account_in_flight * 10 >= account_concurrency * 8 THEN 'simultaneas_por_conta' END], NULL) AS near,
       array_remove(ARRAY[
         CASE WHEN burst_tokens_left < 1 THEN 'rajada' END,
         CASE WHEN reads_this_minute >= reads_per_minute THEN 'leituras_por_minuto' END,
         CASE WHEN writes_this_minute >= writes_per_minute THEN 'escritas_por_minuto' END,
         CASE WHEN calls_this_month >= calls_per_month THEN 'chamadas_por_mes' END,
         CASE WHEN key_in_flight >= key_concurrency THEN 'simultaneas_por_chave' END,
         CASE WHEN account_in_flight >= account_concurrency THEN 'simultaneas_por_conta' END], NULL) AS at_ceiling
  FROM usage;

-- Keys at 80 % or more of any ceiling now: burst, reads or writes of the minute, the month, or
-- simultaneous requests of the key or of its account.
CREATE VIEW api_keys_near_limits AS
SELECT * FROM api_key_usage WHERE cardinality(near) > 0;

-- Keys suspended now (contract §8.4: consecutive limit refusals) and what shows why: the count of
-- refusals in a row, the last that many limit refusals of the key in the request log (the run that
-- suspended it: no limit refusal can follow while it is suspended, and an admitted request would
-- have reset the count) with the routes they asked for, the ceilings at their limit now, and the
-- last e-mail about the key's suspension. Which limit refused each request is not recorded on this
-- version (admission would have to keep it), so neither is when the suspension began.
CREATE VIEW api_keys_suspended AS
SELECT k.conta_id, k.id AS chave_id, k.prefixo, k.nome, c.plano_id, u.email AS creator_email,
       k.suspensa_ate AS suspended_until, k.suspensa_ate - now() AS time_left, k.recusas_consecutivas AS consecutive_refusals,
       s.started_at AS suspended_at, s.limit_name AS limit_hit, s.retry_after AS retry_after_asked,
       (SELECT count(*)::int FROM suspensions d
         WHERE d.conta_id = k.conta_id AND d.chave_id = k.id AND d.started_at > now() - interval '1 day') AS suspensions_24h,
       coalesce(r.logged, 0) AS refusals_logged, r.first_at AS first_refusal_at, r.last_at AS last_refusal_at,
       r.routes AS refused_routes, coalesce(g.at_ceiling, '{}') AS at_ceiling_now,
       n.created_at AS last_notice_at, n.status AS last_notice_status
  FROM chaves_api k
  JOIN contas c ON c.id = k.conta_id
  JOIN usuarios u ON u.conta_id = k.conta_id AND u.id = k.usuario_id
  LEFT JOIN api_key_usage g ON g.conta_id = k.conta_id AND g.chave_id = k.id
  -- The suspension admission recorded (none when an operator suspended the key by hand).
  LEFT JOIN LATERAL (
    SELECT s.started_at, s.limit_name, s.retry_after FROM suspensions s
     WHERE s.conta_id = k.conta_id AND s.chave_id = k.id AND s.ends_at = k.suspensa_ate
     ORDER BY s.id DESC LIMIT 1) s ON true
  LEFT JOIN LATERAL (
    SELECT count(*)::int AS logged, min(x.created_at) AS first_at, max(x.created_at) AS last_at,
           array_agg(DISTINCT x.method || ' ' || coalesce(x.route, x.path)) AS routes
      FROM (SELECT l.created_at, l.method, l.route, l.path FROM request_log l
             WHERE l.conta_id = k.conta_id AND l.chave_id = k.id AND l.codigo = 'limite_excedido'
               AND l.created_at < k.suspensa_ate
             ORDER BY l.created_at DESC LIMIT k.recusas_consecutivas) x
    HAVING count(*) > 0) r ON true
  LEFT JOIN LATERAL (
    SELECT o.created_at, o.status FROM outgoing_emails o
     WHERE o.conta_id = k.conta_id AND o.kind = 'chave_suspensa' AND position(k.prefixo IN o.body) > 0
     ORDER BY o.created_at DESC LIMIT 1) n ON true
 WHERE k.suspensa_ate > now() AND k.revogada_em IS NULL;

-- Requests of the last hour per account (NULL: refused before a key was known), status and codigo,
-- from the request log (written within REQUEST_LOG_FLUSH_MS of each response).
CREATE VIEW requests_last_hour AS
SELECT conta_id, status, codigo, count(*)::int AS requests, sum(cost)::int AS cost_units,
       round(avg(duration_ms)::numeric, 1) AS avg_duration_ms, round(max(duration_ms)::numeric, 1) AS max_duration_ms,
       min(created_at) AS first_at, max(created_at) AS last_at
  FROM request_log
 WHERE created_at > now() - interval '1 hour'
 GROUP BY conta_id, status, codigo
 ORDER BY conta_id NULLS FIRST, status, codigo NULLS FIRST;

-- Webhook deliveries of each endpoint in the current UTC hour (attempts made, retries included)
-- against the hourly cap of its account's plan, which counts every endpoint of the account; every
-- active endpoint, and a disabled one that was sent something this hour.
CREATE VIEW webhook_endpoint_deliveries_this_hour AS
WITH this_hour AS (
  SELECT date_trunc('hour', now(), 'UTC') AS start
), attempts AS (
  SELECT a.conta_id, d.endpoint_id, count(*)::int AS attempts, (count(*) FILTER (WHERE a.succeeded))::int AS succeeded
    FROM all_delivery_attempts a
    JOIN all_deliveries d ON d.conta_id = a.conta_id AND d.id = a.delivery_id
   WHERE a.started_at >= (SELECT start FROM this_hour)
   GROUP BY a.conta_id, d.endpoint_id
), pending AS (
  SELECT conta_id, endpoint_id, count(*)::int AS pending FROM deliveries WHERE status = 'pending' GROUP BY conta_id, endpoint_id
)
SELECT e.conta_id, e.id AS endpoint_id, e.url, e.ativo AS active, c.plano_id,
       coalesce(t.attempts, 0) AS deliveries_this_hour, coalesce(t.succeeded, 0) AS succeeded_this_hour,
       coalesce(t.attempts, 0) - coalesce(t.succeeded, 0) AS failed_this_hour, coalesce(p.pending, 0) AS pending,
       coalesce(u.deliveries, 0) AS account_deliveries_this_hour, pl.entregas_webhook_por_hora AS deliveries_per_hour,
       round(100.0 * coalesce(t.attempts, 0) / pl.entregas_webhook_por_hora, 1) AS pct_of_cap,
       round(100.0 * coalesce(u.deliveries, 0) / pl.entregas_webhook_por_hora, 1) AS account_pct_of_cap
  FROM webhook_endpoints e
  JOIN contas c ON c.id = e.conta_id
  JOIN planos pl ON pl.id = c.plano_id
  LEFT JOIN attempts t ON t.conta_id = e.conta_id AND t.endpoint_id = e.id
  LEFT JOIN pending p ON p.conta_id = e.conta_id AND p.endpoint_id = e.id
  LEFT JOIN webhook_hourly_usage u ON u.conta_id = e.conta_id AND u.hour = (SELECT start FROM this_hour)
 WHERE e.ativo OR t.attempts IS NOT NULL;
