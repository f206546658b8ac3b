-- Admission (DESIGN §3.3, §5): one round trip decides whether a request may run and charges it.
-- Authentication, authorization, then every ceiling of contract §8.1 for the request's cost.

-- Calls per calendar month (UTC) per account, in cost units: durable, it is what the quota counts.
CREATE TABLE uso_mensal (
  conta_id uuid NOT NULL REFERENCES contas (id),
  mes date NOT NULL CHECK (extract(day FROM mes) = 1),
  chamadas int NOT NULL DEFAULT 0 CHECK (chamadas >= 0),
  PRIMARY KEY (conta_id, mes)
);

-- Short-lived counters live in UNLOGGED tables: no WAL on the request path, and losing them in a
-- crash only forgives a few seconds of bursts and one minute of counts.

-- Burst per key: a token bucket, refilled continuously at the plan's rate.
CREATE UNLOGGED TABLE rate_buckets (
  conta_id uuid NOT NULL,
  chave_id uuid NOT NULL PRIMARY KEY,
  tokens double precision NOT NULL CHECK (tokens >= 0),
  refreshed_at timestamptz NOT NULL
);

-- Reads and writes per minute per account: fixed windows of one calendar minute.
CREATE UNLOGGED TABLE minute_windows (
  conta_id uuid NOT NULL,
  classe text NOT NULL CHECK (classe IN ('leitura', 'escrita')),
  window_start timestamptz NOT NULL,
  used int NOT NULL CHECK (used >= 0),
  PRIMARY KEY (conta_id, classe)
);

-- Simultaneous requests: per serving process and key, how many of the key's requests it is
-- serving now. Counters updated in place (no row per request, so no dead rows to wade through);
-- a process renews its rows every few seconds, and the rows of a process that died stop counting
-- by themselves within 30 s.
CREATE UNLOGGED TABLE request_slots (
  holder text NOT NULL,
  chave_id uuid NOT NULL,
  conta_id uuid NOT NULL,
  in_flight int NOT NULL CHECK (in_flight >= 0),
  expires_at timestamptz NOT NULL,
  PRIMARY KEY (holder, chave_id)
);
CREATE INDEX request_slots_conta ON request_slots (conta_id);

CREATE TYPE admission AS (
  outcome text,          -- ok | nao_autenticado | escopo_insuficiente | limite_excedido | indisponivel
  reason text,           -- why a 403/429/503 was given
  conta_id uuid,
  chave_id uuid,
  usuario_id uuid,
  plano_id text,
  permissoes text[],
  slot_held boolean,     -- a concurrency slot was taken: release it when the response is done
  retry_after int,       -- seconds, for 429 and 503
  suspended_until timestamptz,  -- set when this refusal suspended the key
  window_start timestamptz,     -- the minute window and month charged (for settlement)
  mes date,
  rajada_q int, rajada_w int, rajada_r int, rajada_t int,
  minuto_q int, minuto_r int, minuto_t int,
  mes_q int, mes_r int, mes_t int
);

CREATE FUNCTION api_admit(
  p_token_hash bytea,
  p_escopo text,
  p_permissao text,
  p_custo int,
  p_classe text,      -- leitura | escrita (the per-minute counter the cost is charged to)
  p_holder text,      -- the process serving the request
  p_release uuid[]    -- keys of this account whose requests on this process finished (one entry
                      -- per request), released here to save a round trip
) RETURNS admission
LANGUAGE plpgsql AS $$
DECLARE
  k record;
  r admission;
  v_now timestamptz := now();
  v_window timestamptz := date_trunc('minute', now());
  v_mes date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  v_next_month timestamptz := (v_mes + interval '1 month') AT TIME ZONE 'UTC';
  v_custo int;
  v_tokens double precision;
  v_minute_used int;
  v_minute_q int;
  v_month_used int;
  v_key_slots int;
  v_account_slots int;
  v_released uuid;
BEGIN
  SELECT ch.conta_id, ch.id, ch.usuario_id, ch.escopos, ch.expira_em, ch.revogada_em, ch.suspensa_ate,
         ch.recusas_consecutivas, ch.ultimo_uso_em, ch.nome, ch.prefixo,
         c.bloqueada, c.api_ativa, c.plano_id, u.email,
         CASE WHEN u.ativo THEN u.permissoes ELSE '{}'::text[] END AS permissoes,
         p.api_disponivel, p.leituras_por_minuto, p.escritas_por_minuto, p.chamadas_por_mes, p.rajada,
         p.rajada_recarga_por_segundo, p.simultaneas_por_chave, p.simultaneas_por_conta,
         pl.api_enabled
    INTO k
    FROM chaves_api ch
    JOIN contas c ON c.id = ch.conta_id
    JOIN planos p ON p.id = c.plano_id
    JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
    CROSS JOIN platform pl
   WHERE ch.token_hash = p_token_hash;

  IF NOT FOUND OR k.revogada_em IS NOT NULL OR (k.expira_em IS NOT NULL AND k.expira_em <= v_now) THEN
    r.outcome := 'nao_autenticado';
    RETURN r;
  END IF;

  r.conta_id := k.conta_id;
  r.chave_id := k.id;
  r.usuario_id := k.usuario_id;
  r.plano_id := k.plano_id;
  r.permissoes := k.permissoes;

  -- A suspension that has run out is forgotten with its count, even if the job that lifts it
  -- never ran.
  IF k.suspensa_ate IS NOT NULL AND k.suspensa_ate <= v_now THEN
    UPDATE chaves_api SET suspensa_ate = NULL, recusas_consecutivas = 0 WHERE conta_id = k.conta_id AND id = k.id;
    k.suspensa_ate := NULL;
    k.recusas_consecutivas := 0;
  END IF;

  r.outcome := 'escopo_insuficiente';
  IF k.bloqueada THEN
    r.reason := 'conta_bloqueada';
    RETURN r;
  ELSIF NOT k.api_ativa OR NOT k.api_disponivel THEN
    r.reason := 'modulo_desligado';
    RETURN r;
  ELSIF k.suspensa_ate IS NOT NULL THEN
    r.reason := 'chave_suspensa';
    r.suspended_until := k.suspensa_ate;
    RETURN r;
  ELSIF p_escopo IS NOT NULL AND NOT (p_escopo = ANY (k.escopos)) THEN
    r.reason := 'escopo';
    RETURN r;
  ELSIF p_permissao IS NOT NULL AND NOT (p_permissao = ANY (k.permissoes)) THEN
    r.reason := 'permissao';
    RETURN r;
  END IF;
  IF NOT k.api_enabled THEN
    r.outcome := 'indisponivel';
    r.reason := 'api_desligada';
    r.retry_after := 60;
    RETURN r;
  END IF;

  -- Limits. Requests of one account are decided one at a time, so racing requests (on any number
  -- of web processes) can never pass a ceiling together. Every writer of this account's counters
  -- holds this lock first (and only this account's), so no two transactions wait on each other in
  -- a circle.
  PERFORM pg_advisory_xact_lock(hashtextextended(k.conta_id::text, 7410203));

  -- Usually one or two entries: a plain UPDATE each is cheaper than a set-based one. Only this
  -- account's keys: the slot rows of other accounts are theirs to lock.
  FOREACH v_released IN ARRAY coalesce(p_release, '{}') LOOP
    UPDATE request_slots SET in_flight = greatest(0, in_flight - 1)
     WHERE holder = p_holder AND chave_id = v_released AND conta_id = k.conta_id;
  END LOOP;

  v_custo := least(p_custo, k.rajada);
  v_minute_q := CASE WHEN p_classe = 'escrita' THEN k.escritas_por_minuto ELSE k.leituras_por_minuto END;

  -- Every counter in one statement (each statement of a function costs as much as a small query).
  SELECT coalesce((SELECT least(k.rajada::double precision,
                                b.tokens + extract(epoch FROM v_now - b.refreshed_at) * k.rajada_recarga_por_segundo)
                     FROM rate_buckets b WHERE b.chave_id = k.id), k.rajada),
         coalesce((SELECT w.used FROM minute_windows w
                    WHERE w.conta_id = k.conta_id AND w.classe = p_classe AND w.window_start = v_window), 0),
         coalesce((SELECT u.chamadas FROM uso_mensal u WHERE u.conta_id = k.conta_id AND u.mes = v_mes), 0),
         coalesce(sum(s.in_flight) FILTER (WHERE s.chave_id = k.id), 0),
         coalesce(sum(s.in_flight), 0)
    INTO v_tokens, v_minute_used, v_month_used, v_key_slots, v_account_slots
    FROM request_slots s WHERE s.conta_id = k.conta_id AND s.expires_at > v_now;

  r.outcome := 'limite_excedido';
  IF v_key_slots >= k.simultaneas_por_chave OR v_account_slots >= k.simultaneas_por_conta THEN
    r.reason := 'simultaneas';
    r.retry_after := 1;
  ELSIF v_tokens < v_custo THEN
    r.reason := 'rajada';
    r.retry_after := ceil((v_custo - v_tokens) / k.rajada_recarga_por_segundo);
  ELSIF v_minute_used + v_custo > v_minute_q THEN
    r.reason := 'minuto';
    r.retry_after := ceil(extract(epoch FROM v_window + interval '1 minute' - v_now));
  ELSIF v_month_used + v_custo > k.chamadas_por_mes THEN
    r.reason := 'mes';
    r.retry_after := ceil(extract(epoch FROM v_next_month - v_now));
  ELSE
    r.outcome := 'ok';
  END IF;

  IF r.outcome = 'ok' THEN
    v_tokens := v_tokens - v_custo;
    v_minute_used := v_minute_used + v_custo;
    v_month_used := v_month_used + v_custo;
    -- The four counters in one statement.
    WITH bucket AS (
      INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at) VALUES (k.conta_id, k.id, v_tokens, v_now)
        ON CONFLICT (chave_id) DO UPDATE SET tokens = excluded.tokens, refreshed_at = excluded.refreshed_at
    ), minute AS (
      INSERT INTO minute_windows (conta_id, classe, window_start, used) VALUES (k.conta_id, p_classe, v_window, v_minute_used)
        ON CONFLICT (conta_id, classe) DO UPDATE SET window_start = excluded.window_start, used = excluded.used
    ), month AS (
      INSERT INTO uso_mensal (conta_id, mes, chamadas) VALUES (k.conta_id, v_mes, v_custo)
        ON CONFLICT (conta_id, mes) DO UPDATE SET chamadas = uso_mensal.chamadas + excluded.chamadas
    )
    -- A row that had expired belonged to this process while it looked dead: start it over.
    INSERT INTO request_slots (holder, chave_id, conta_id, in_flight, expires_at)
      VALUES (p_holder, k.id, k.conta_id, 1, v_now + interval '30 seconds')
      ON CONFLICT (holder, chave_id) DO UPDATE
        SET in_flight = CASE WHEN request_slots.expires_at > v_now THEN request_slots.in_flight + 1 ELSE 1 END,
            expires_at = excluded.expires_at;
    r.slot_held := true;
    -- Last use is for people, not for rules: minute precision spares a write per request.
    IF k.recusas_consecutivas > 0 OR k.ultimo_uso_em IS NULL OR k.ultimo_uso_em < v_now - interval '1 minute' THEN
      UPDATE chaves_api SET recusas_consecutivas = 0, ultimo_uso_em = v_now WHERE conta_id = k.conta_id AND id = k.id;
    END IF;
    r.window_start := v_window;
    r.mes := v_mes;
  ELSE
    UPDATE chaves_api SET recusas_consecutivas = recusas_consecutivas + 1
     WHERE conta_id = k.conta_id AND id = k.id
    RETURNING recusas_consecutivas INTO k.recusas_consecutivas;
    IF k.recusas_consecutivas >= 20 THEN
      r.suspended_until := v_now + interval '15 minutes';
      UPDATE chaves_api SET suspensa_ate = r.suspended_until WHERE conta_id = k.conta_id AND id = k.id;
      INSERT INTO outgoing_emails (conta_id, kind, to_address, subject, body)
      VALUES (k.conta_id, 'chave_suspensa', k.email,
              'Chave de API ' || k.prefixo || ' suspensa por 15 minutos',
              'A chave de API "' || k.nome || '" (prefixo ' || k.prefixo || ') recebeu 20 recusas seguidas por limite de uso'
              || ' e ficará suspensa até ' || to_char(r.suspended_until AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC.'
              || E'\n\nRespeite o cabeçalho Retry-After das respostas 429 para evitar novas suspensões.');
    END IF;
  END IF;

  -- Headers (contract §8.3): every ceiling with what is left of it after this request.
  r.rajada_q := k.rajada;
  r.rajada_w := ceil(k.rajada::numeric / k.rajada_recarga_por_segundo);
  r.rajada_r := floor(v_tokens);
  r.rajada_t := ceil((k.rajada - v_tokens) / k.rajada_recarga_por_segundo);
  r.minuto_q := v_minute_q;
  r.minuto_r := greatest(0, v_minute_q - v_minute_used);
  r.minuto_t := ceil(extract(epoch FROM v_window + interval '1 minute' - v_now));
  r.mes_q := k.chamadas_por_mes;
  r.mes_r := greatest(0, k.chamadas_por_mes - v_month_used);
  r.mes_t := ceil(extract(epoch FROM v_next_month - v_now));
  RETURN r;
END $$;

-- Releases the slots of finished requests that no admission of their account picked up: under the
-- accounts' locks, taken in one order.
CREATE FUNCTION api_release(p_holder text, p_conta_id uuid[], p_chave_id uuid[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended(conta_id::text, 7410203))
     FROM (SELECT DISTINCT conta_id FROM unnest(p_conta_id) AS x(conta_id) ORDER BY conta_id) a;
  UPDATE request_slots s SET in_flight = greatest(0, s.in_flight - done.n)
    FROM (SELECT x.chave_id, count(*)::int AS n FROM unnest(p_chave_id) AS x(chave_id) GROUP BY x.chave_id) done
   WHERE s.holder = p_holder AND s.chave_id = done.chave_id;
END $$;

-- Gives back what a request was charged beyond its final cost (a 304, an idempotent repetition,
-- fewer products than limite): rows of (chave_id, conta_id, classe, window_start, mes, burst,
-- minute, month) refunds, applied in one call per batch, off the request path.
CREATE FUNCTION api_settle(
  p_chave_id uuid[], p_conta_id uuid[], p_classe text[], p_window timestamptz[], p_mes date[],
  p_burst int[], p_minute int[], p_month int[], p_read_charge int[]
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- The same per-account lock as admission, which writes these rows from values it read; taken in
  -- one order so two settling processes never deadlock.
  PERFORM pg_advisory_xact_lock(hashtextextended(conta_id::text, 7410203))
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
    UPDATE uso_mensal u SET chamadas = greatest(0, u.chamadas - g.month)
      FROM (SELECT conta_id, mes, sum(month) AS month FROM s WHERE month > 0 GROUP BY conta_id, mes) g
     WHERE u.conta_id = g.conta_id AND u.mes = g.mes
  )
  -- Refunds of the class charged, and the read a repetition counts as (contract §8.2), netted per
  -- window so one statement touches each row once; never past the ceiling.
  UPDATE minute_windows w SET used = greatest(0, least(g.ceiling, w.used + g.delta))
    FROM (SELECT d.conta_id, d.classe, d.window_start, sum(d.delta) AS delta,
                 min(CASE WHEN d.classe = 'escrita' THEN p.escritas_por_minuto ELSE p.leituras_por_minuto END) AS ceiling
            FROM (SELECT conta_id, classe, window_start, -minute AS delta FROM s WHERE minute > 0
                  UNION ALL
                  SELECT conta_id, 'leitura', window_start, read_charge FROM s WHERE read_charge > 0) d
            JOIN contas c ON c.id = d.conta_id JOIN planos p ON p.id = c.plano_id
           GROUP BY d.conta_id, d.classe, d.window_start) g
   WHERE w.conta_id = g.conta_id AND w.classe = g.classe AND w.window_start = g.window_start;
END $$;
