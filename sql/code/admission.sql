-- Admission (DESIGN §3.3, §5): one round trip decides whether a request may run and charges it:
-- authentication, authorization, then every ceiling of contract §8.1 for the request's cost. What
-- a web process calls, how finished requests give their slots back, how a request that cost less
-- than it was charged is settled, and the calls each account made in each month.

-- What a web process calls: a batch of one takes api_admit_one (admission_one.sql), a larger one
-- api_admit_many (admission_many.sql). The answer is the json array as text, built as text by both:
-- the web process parses it, so the database need not (measured: casting the single path's text to
-- json and back cost about 15 µs of a 260 µs admission).
CREATE FUNCTION api_admit_batch(
  p_hashes bytea[], p_escopos text[], p_permissoes text[], p_custos int[], p_custos_mes int[], p_classes text[], p_provas jsonb,
  p_holder text, p_release_contas uuid[], p_release_chaves uuid[]
) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  IF cardinality(p_hashes) = 1 THEN
    RETURN '[' || api_admit_one(p_hashes[1], p_escopos[1], p_permissoes[1], p_custos[1], p_custos_mes[1], p_classes[1], p_provas -> 0,
                                p_holder, p_release_contas, p_release_chaves) || ']';
  END IF;
  RETURN api_admit_many(p_hashes, p_escopos, p_permissoes, p_custos, p_custos_mes, p_classes, p_provas, p_holder,
                        p_release_contas, p_release_chaves);
END $$;

-- One request alone, as an admission row (operators, tests): the batch's text read as json here.
CREATE FUNCTION api_admit(
  p_token_hash bytea,
  p_escopo text,
  p_permissao text,
  p_custo int,
  p_classe text,
  p_holder text,
  p_release uuid[]
) RETURNS admission
LANGUAGE sql AS $$
  SELECT * FROM json_populate_record(NULL::admission,
    api_admit_batch(ARRAY[p_token_hash], ARRAY[p_escopo], ARRAY[p_permissao], ARRAY[p_custo], ARRAY[NULL::int], ARRAY[p_classe], NULL, p_holder,
                    ARRAY(SELECT ch.conta_id FROM unnest(p_release) AS u(id) JOIN chaves_api ch ON ch.id = u.id),
                    ARRAY(SELECT u.id FROM unnest(p_release) AS u(id) JOIN chaves_api ch ON ch.id = u.id))::json -> 0)
$$;

-- Releases the slots of finished requests that no admission of their account picked up: under the
-- accounts' locks, taken in one order.
CREATE FUNCTION api_release(p_holder text, p_conta_id uuid[], p_chave_id uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(conta_lock_key(conta_id))
     FROM (SELECT DISTINCT conta_id FROM unnest(p_conta_id) AS x(conta_id) ORDER BY conta_id) a;
  UPDATE request_slots s SET in_flight = greatest(0, s.in_flight - done.n)
    FROM (SELECT x.chave_id, count(*)::int AS n FROM unnest(p_chave_id) AS x(chave_id) GROUP BY x.chave_id) done
   WHERE s.holder = p_holder AND s.chave_id = done.chave_id;
END $$;

-- Gives back what a request was charged beyond its final cost (a 304, an idempotent repetition,
-- fewer products than limite): rows of (chave_id, conta_id, classe, window_start, mes, burst,
-- minute, month) refunds, applied in one call per batch, off the request path. Refunds of the month
-- go back to the advance, with no durable write either.
CREATE FUNCTION api_settle(
  p_chave_id uuid[], p_conta_id uuid[], p_classe text[], p_window timestamptz[], p_mes date[],
  p_burst int[], p_minute int[], p_month int[], p_read_charge int[]
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- The same per-account lock as admission, which writes these rows from values it read; taken in
  -- one order so two settling processes never deadlock.
  PERFORM pg_advisory_xact_lock(conta_lock_key(conta_id))
     FROM (SELECT DISTINCT conta_id FROM unnest(p_conta_id) AS x(conta_id) ORDER BY conta_id) a;

  WITH s AS (
    SELECT * FROM unnest(p_chave_id, p_conta_id, p_classe, p_window, p_mes, p_burst, p_minute, p_month, p_read_charge)
      AS x(chave_id, conta_id, classe, window_start, mes, burst, minute, month, read_charge)
  ), burst AS (
    UPDATE rate_buckets b SET tokens = least(g.capacity, b.tokens + g.burst)
      FROM (SELECT s.chave_id, sum(s.burst) AS burst, min(p.rajada) AS capacity
              FROM s JOIN contas c ON c.id = s.conta_id JOIN planos p ON p.id = c.plano_id
             WHERE s.burst > 0 GROUP BY s.chave_id) g
     WHERE b.chave_id = g.chave_id
  ), month AS (
    -- Given back to the month's advance: spent by the next admissions without a durable write
    -- (uso_mensal already counts it), or, if a crash forgets it, left counted.
    -- An advance that no longer agrees with uso_mensal (set by hand) starts over from the refund.
    INSERT INTO month_advances AS a (conta_id, mes, charged, unspent)
    SELECT g.conta_id, g.mes, u.chamadas, least(g.month, u.chamadas)
      FROM (SELECT conta_id, mes, sum(month)::int AS month FROM s WHERE month > 0 GROUP BY conta_id, mes) g
      JOIN uso_mensal u ON u.conta_id = g.conta_id AND u.mes = g.mes
    ON CONFLICT (conta_id, mes) DO UPDATE
      SET unspent = least(excluded.charged, CASE WHEN a.charged = excluded.charged THEN a.unspent ELSE 0 END + excluded.unspent),
          charged = excluded.charged
  )
  -- Refunds of the class charged, and the read a repetition counts as (contract §8.2), netted per
  -- window so one statement touches each row once; never past the ceiling. The read of a write's
  -- repetition may be the first read of its minute: the window row is then made, or started over.
  INSERT INTO minute_windows AS w (conta_id, classe, window_start, used)
  SELECT g.conta_id, g.classe, greatest(cur.window_start, g.window_start),
         CASE WHEN cur.window_start = g.window_start THEN greatest(0, least(g.ceiling, cur.used + g.delta))
              WHEN cur.window_start > g.window_start THEN cur.used
              ELSE greatest(0, least(g.ceiling, g.delta)) END
    -- Of settlements that span two minutes (flushed across a minute's end), the earlier minute's are
    -- past: its window has started over.
    FROM (SELECT DISTINCT ON (d.conta_id, d.classe) d.conta_id, d.classe, d.window_start, sum(d.delta)::int AS delta,
                 min(CASE WHEN d.classe = 'escrita' THEN p.escritas_por_minuto ELSE p.leituras_por_minuto END) AS ceiling
            FROM (SELECT conta_id, classe, window_start, -minute AS delta FROM s WHERE minute > 0
                  UNION ALL
                  SELECT conta_id, 'leitura', window_start, read_charge FROM s WHERE read_charge > 0) d
            JOIN contas c ON c.id = d.conta_id JOIN planos p ON p.id = c.plano_id
           GROUP BY d.conta_id, d.classe, d.window_start
           ORDER BY d.conta_id, d.classe, d.window_start DESC) g
    LEFT JOIN minute_windows cur ON cur.conta_id = g.conta_id AND cur.classe = g.classe
  ON CONFLICT (conta_id, classe) DO UPDATE SET window_start = excluded.window_start, used = excluded.used;
END $$;

-- The calls each account made in each month: what the quota counts and GET /conta shows.
CREATE VIEW uso_mensal_efetivo AS
SELECT u.conta_id, u.mes, u.chamadas - coalesce(a.unspent, 0) AS chamadas, coalesce(a.unspent, 0) AS adiantadas
  FROM uso_mensal u
  LEFT JOIN month_advances a ON a.conta_id = u.conta_id AND a.mes = u.mes AND a.charged = u.chamadas;
