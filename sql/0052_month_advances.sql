-- The month counter charged ahead, in durable blocks (DESIGN §3.3: the month counter is always
-- durable; the short-lived counters may skip the WAL).
--
-- Before this, every admission added its cost to uso_mensal, the one logged table it wrote, and so
-- waited for a WAL flush at commit: measured, about 0.25 ms of a quiet admission's time on this
-- machine. Now admission charges uso_mensal a block at a time (a thousandth of the plan's calls per
-- month, never past the ceiling), in the transaction of the request that needs it, and spends the
-- block here, in an UNLOGGED table. The other admissions write no WAL at all, and their commits
-- wait for no flush. PostgreSQL's own sequences work this way: values are logged ahead of use.
--
-- What is durable is what counts: uso_mensal.chamadas is never below the calls made. A crash of
-- PostgreSQL forgets what was left of a block (UNLOGGED tables come back empty), and those units
-- stay counted as used: an account can lose at most one block (0.1 % of its month), never get a
-- call it did not pay for. The calls made are uso_mensal minus the advance left: the view
-- uso_mensal_efetivo, read by GET /conta, the headers and operators.

CREATE UNLOGGED TABLE month_advances (
  conta_id uuid NOT NULL,
  mes date NOT NULL CHECK (extract(day FROM mes) = 1),
  -- uso_mensal.chamadas when the advance was last written: an advance counts only while they
  -- agree, so an operator who sets uso_mensal by hand sets the calls made, advance or not.
  charged int NOT NULL,
  -- Units charged to uso_mensal for this month and not used yet.
  unspent int NOT NULL CHECK (unspent >= 0 AND unspent <= charged),
  PRIMARY KEY (conta_id, mes)
);

COMMENT ON COLUMN uso_mensal.chamadas IS
  'Units charged for the month, durably: the calls made plus what is left of the advance (month_advances). The calls made: uso_mensal_efetivo.';

-- The calls each account made in each month: what the quota counts and GET /conta shows.
CREATE VIEW uso_mensal_efetivo AS
SELECT u.conta_id, u.mes, u.chamadas - coalesce(a.unspent, 0) AS chamadas, coalesce(a.unspent, 0) AS adiantadas
  FROM uso_mensal u
  LEFT JOIN month_advances a ON a.conta_id = u.conta_id AND a.mes = u.mes AND a.charged = u.chamadas;

CREATE OR REPLACE FUNCTION api_admit_batch(
  p_hashes bytea[],         -- per request: SHA-256 of the presented token
  p_escopos text[],         -- the scope the route needs (NULL: none)
  p_permissoes text[],      -- the permission the key's creator must hold (NULL: none)
  p_custos int[],           -- cost units of §8.2
  p_classes text[],         -- leitura | escrita: the per-minute counter charged
  p_holder text,            -- the process serving the requests
  p_release_contas uuid[],  -- requests this process finished since its last batch, whose slots
  p_release_chaves uuid[]   -- are given back here (account and key of each)
) RETURNS json
LANGUAGE plpgsql
-- Its reading statement joins a dozen tables: planned once, not at every call (a custom plan
-- costs more than the batch it plans for), and never compiled (JIT would cost more than the batch).
-- Every lookup is by key: an index lookup whatever the statistics said when the connection first
-- planned it (a plan made while a table was small was a sequential scan, kept as the table grew).
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
DECLARE
  v_now timestamptz := now();
  v_window timestamptz := date_trunc('minute', now());
  v_mes date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  v_next_month timestamptz := (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
  v_out text[] := array_fill(NULL::text, ARRAY[cardinality(p_hashes)]);
  x record;
  v_outcome text; v_reason text; v_retry int; v_custo int; v_used int; v_win timestamptz; v_suspended_now timestamptz;
  -- The account being decided (requests come grouped by account, in the order asked) and its
  -- counters.
  v_conta uuid;
  a int := 0;
  v_win_l timestamptz; v_used_l int; v_win_e timestamptz; v_used_e int; v_account_slots int;
  -- The month: units used, units charged to uso_mensal, and what is left of the advance.
  v_month int; v_chamadas int; v_unspent int; v_block int;
  -- The key being decided and its state; k keys seen so far, the account's from v_first_key on.
  v_chave uuid;
  v_k int;
  k int := 0;
  v_first_key int;
  v_tokens double precision; v_key_slots int; v_recusas int; v_suspensa timestamptz;
  -- What the batch writes back: one entry per account and per key it decided.
  a_conta uuid[] := '{}'; a_win_l timestamptz[] := '{}'; a_used_l int[] := '{}';
  a_win_e timestamptz[] := '{}'; a_used_e int[] := '{}'; a_month int[] := '{}';
  a_charged int[] := '{}'; a_unspent int[] := '{}';
  k_chave uuid[] := '{}'; k_conta uuid[] := '{}'; k_tokens double precision[] := '{}'; k_refreshed timestamptz[] := '{}';
  k_taken int[] := '{}'; k_recusas int[] := '{}'; k_suspensa timestamptz[] := '{}'; k_update boolean[] := '{}';
  k_suspended boolean[] := '{}'; k_inflight int[] := '{}';
  v_key_updates boolean := false;
BEGIN
  -- Requests of one account are decided one at a time across every process: a batch takes the
  -- locks of its accounts, and of the accounts whose slots it gives back, in one order, so
  -- batches never wait on each other in a circle. Every writer of these counters holds the lock.
  PERFORM pg_advisory_xact_lock(hashtextextended(l.conta_id::text, 7410203))
     FROM (SELECT ch.conta_id FROM chaves_api ch WHERE ch.token_hash = ANY (p_hashes)
           UNION
           SELECT u.conta_id FROM unnest(p_release_contas) AS u(conta_id)
           ORDER BY 1) l;

  -- Read after the locks (a statement of its own: its snapshot sees what the previous holder of a
  -- lock committed). Counters are read with every request; within an account only the first
  -- reading is used, then carried from request to request. Slots count without the releases this
  -- batch carries.
  FOR x IN
    SELECT h.i::int AS i, h.custo, h.classe, k.*,
           -- Refusals that do not depend on the counters, before and after the suspension check.
           CASE WHEN k.bloqueada THEN 'conta_bloqueada'
                WHEN NOT k.api_ativa OR NOT k.api_disponivel THEN 'modulo_desligado' END AS refused_before,
           CASE WHEN h.escopo IS NOT NULL AND NOT (h.escopo = ANY (k.escopos)) THEN 'escopo'
                WHEN h.permissao IS NOT NULL AND NOT (h.permissao = ANY (k.permissoes)) THEN 'permissao'
                WHEN NOT (SELECT api_enabled FROM platform) THEN 'api_desligada' END AS refused_after,
           CASE WHEN h.classe = 'escrita' THEN k.escritas_por_minuto ELSE k.leituras_por_minuto END AS minuto_q,
           b.tokens, b.refreshed_at, wl.window_start AS win_l, wl.used AS used_l, we.window_start AS win_e, we.used AS used_e,
           m.chamadas AS month_charged, ma.unspent AS month_unspent, s.key_slots, s.account_slots
      FROM unnest(p_hashes, p_escopos, p_permissoes, p_custos, p_classes)
             WITH ORDINALITY AS h(hash, escopo, permissao, custo, classe, i)
      -- Each lookup is its own subquery (LIMIT 1: never merged into one big join), so it stays an
      -- index lookup by the row before it whatever the tables' statistics say.
      LEFT JOIN LATERAL (
        SELECT ch.id AS chave_id, ch.conta_id, ch.usuario_id, ch.escopos, ch.suspensa_ate, ch.recusas_consecutivas,
               ch.ultimo_uso_em, c.plano_id, c.bloqueada, c.api_ativa,
               CASE WHEN u.ativo THEN u.permissoes ELSE '{}'::text[] END AS permissoes,
               p.api_disponivel, p.rajada, p.rajada_recarga_por_segundo, p.simultaneas_por_chave, p.simultaneas_por_conta,
               p.chamadas_por_mes, p.leituras_por_minuto, p.escritas_por_minuto
          FROM chaves_api ch
          JOIN contas c ON c.id = ch.conta_id
          JOIN planos p ON p.id = c.plano_id
          JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
         WHERE ch.token_hash = h.hash AND ch.revogada_em IS NULL AND (ch.expira_em IS NULL OR ch.expira_em > v_now)
         LIMIT 1) k ON true
      LEFT JOIN LATERAL (SELECT tokens, refreshed_at FROM rate_buckets WHERE chave_id = k.chave_id LIMIT 1) b ON true
      LEFT JOIN LATERAL (SELECT window_start, used FROM minute_windows
                          WHERE conta_id = k.conta_id AND classe = 'leitura' LIMIT 1) wl ON true
      LEFT JOIN LATERAL (SELECT window_start, used FROM minute_windows
                          WHERE conta_id = k.conta_id AND classe = 'escrita' LIMIT 1) we ON true
      LEFT JOIN LATERAL (SELECT chamadas FROM uso_mensal WHERE conta_id = k.conta_id AND mes = v_mes LIMIT 1) m ON true
      LEFT JOIN LATERAL (SELECT unspent FROM month_advances
                          WHERE conta_id = k.conta_id AND mes = v_mes AND charged = m.chamadas LIMIT 1) ma ON true
      LEFT JOIN LATERAL (
        SELECT coalesce(sum(rs.in_flight) FILTER (WHERE rs.chave_id = k.chave_id), 0)::int
                 - (SELECT count(*) FROM unnest(p_release_chaves) AS r(chave_id) WHERE r.chave_id = k.chave_id)::int AS key_slots,
               coalesce(sum(rs.in_flight), 0)::int
                 - (SELECT count(*) FROM unnest(p_release_contas) AS r(conta_id) WHERE r.conta_id = k.conta_id)::int AS account_slots
          FROM request_slots rs WHERE rs.conta_id = k.conta_id AND rs.expires_at > v_now) s ON k.chave_id IS NOT NULL
     ORDER BY k.conta_id, h.i
  LOOP
    IF x.chave_id IS NULL THEN
      v_out[x.i] := '{"outcome":"nao_autenticado"}';
      CONTINUE;
    END IF;

    IF v_conta IS DISTINCT FROM x.conta_id THEN
      v_conta := x.conta_id;
      a := a + 1;
      v_first_key := k + 1;
      -- A window newer than this transaction's clock was opened by a batch that started later but
      -- took the lock first: it is the current one.
      v_win_l := greatest(x.win_l, v_window);
      v_used_l := CASE WHEN x.win_l >= v_window THEN x.used_l ELSE 0 END;
      v_win_e := greatest(x.win_e, v_window);
      v_used_e := CASE WHEN x.win_e >= v_window THEN x.used_e ELSE 0 END;
      v_chamadas := coalesce(x.month_charged, 0);
      v_unspent := coalesce(x.month_unspent, 0);
      v_month := v_chamadas - v_unspent;
      v_account_slots := greatest(0, x.account_slots);
      a_conta[a] := v_conta; a_win_l[a] := v_win_l; a_used_l[a] := NULL; a_win_e[a] := v_win_e; a_used_e[a] := NULL; a_month[a] := 0; a_unspent[a] := NULL;
    END IF;

    -- The key's state: kept in k_* between its requests, in v_* while its requests come in a row.
    IF v_chave IS DISTINCT FROM x.chave_id THEN
      IF v_chave IS NOT NULL THEN
        k_tokens[v_k] := v_tokens; k_inflight[v_k] := v_key_slots; k_recusas[v_k] := v_recusas; k_suspensa[v_k] := v_suspensa;
      END IF;
      v_chave := x.chave_id;
      v_k := array_position(k_chave, v_chave, v_first_key);
      IF v_k IS NULL THEN
        k := k + 1;
        v_k := k;
        v_tokens := CASE WHEN x.tokens IS NULL THEN x.rajada
                         ELSE least(x.rajada::double precision,
                                    x.tokens + greatest(0, extract(epoch FROM v_now - x.refreshed_at)) * x.rajada_recarga_por_segundo) END;
        v_key_slots := greatest(0, x.key_slots);
        v_recusas := x.recusas_consecutivas;
        v_suspensa := x.suspensa_ate;
        k_chave[k] := v_chave; k_conta[k] := v_conta; k_refreshed[k] := greatest(x.refreshed_at, v_now);
        k_taken[k] := 0; k_suspended[k] := false;
        -- A suspension that has run out is forgotten with its count, even if the job that lifts it
        -- never ran. The last use is kept to the minute: it is for people, not rules.
        k_update[k] := v_suspensa <= v_now OR x.ultimo_uso_em IS NULL OR x.ultimo_uso_em < v_now - interval '1 minute';
        IF v_suspensa <= v_now THEN
          v_suspensa := NULL;
          v_recusas := 0;
        END IF;
      ELSE
        v_tokens := k_tokens[v_k]; v_key_slots := k_inflight[v_k]; v_recusas := k_recusas[v_k]; v_suspensa := k_suspensa[v_k];
      END IF;
    END IF;

    v_reason := coalesce(x.refused_before, CASE WHEN v_suspensa IS NOT NULL THEN 'chave_suspensa' END, x.refused_after);
    IF v_reason IS NOT NULL THEN
      v_out[x.i] := json_build_object(
        'outcome', CASE WHEN v_reason = 'api_desligada' THEN 'indisponivel' ELSE 'escopo_insuficiente' END,
        'reason', v_reason, 'conta_id', x.conta_id, 'chave_id', x.chave_id, 'usuario_id', x.usuario_id,
        'plano_id', x.plano_id, 'permissoes', x.permissoes,
        'retry_after', CASE WHEN v_reason = 'api_desligada' THEN 60 END,
        'suspended_until', CASE WHEN v_reason = 'chave_suspensa' THEN v_suspensa END)::text;
      CONTINUE;
    END IF;

    -- Limits: every ceiling of the plan for this request's cost.
    v_custo := least(x.custo, x.rajada);
    IF x.classe = 'escrita' THEN v_used := v_used_e; v_win := v_win_e; ELSE v_used := v_used_l; v_win := v_win_l; END IF;
    v_outcome := 'limite_excedido';
    v_suspended_now := NULL;
    IF v_key_slots >= x.simultaneas_por_chave OR v_account_slots >= x.simultaneas_por_conta THEN
      v_reason := 'simultaneas';
      v_retry := 1;
    ELSIF v_tokens < v_custo THEN
      v_reason := 'rajada';
      v_retry := ceil((v_custo - v_tokens) / x.rajada_recarga_por_segundo);
    ELSIF v_used + v_custo > x.minuto_q THEN
      v_reason := 'minuto';
      v_retry := ceil(extract(epoch FROM v_win + interval '1 minute' - v_now));
    ELSIF v_month + v_custo > x.chamadas_por_mes THEN
      v_reason := 'mes';
      v_retry := ceil(extract(epoch FROM v_next_month - v_now));
    ELSE
      v_outcome := 'ok';
      v_retry := NULL;
      v_tokens := v_tokens - v_custo;
      v_used := v_used + v_custo;
      IF x.classe = 'escrita' THEN v_used_e := v_used; a_used_e[a] := v_used; ELSE v_used_l := v_used; a_used_l[a] := v_used; END IF;
      v_month := v_month + v_custo;
      -- Spent from the advance; when it runs short, uso_mensal is charged the next block (a
      -- thousandth of the month's calls, never past the ceiling) in this same transaction.
      IF v_unspent < v_custo THEN
        v_block := least(x.chamadas_por_mes - v_chamadas, greatest(v_custo - v_unspent, x.chamadas_por_mes / 1000));
        v_chamadas := v_chamadas + v_block;
        v_unspent := v_unspent + v_block;
        a_month[a] := a_month[a] + v_block;
      END IF;
      v_unspent := v_unspent - v_custo;
      a_charged[a] := v_chamadas;
      a_unspent[a] := v_unspent;
      v_key_slots := v_key_slots + 1;
      v_account_slots := v_account_slots + 1;
      k_taken[v_k] := k_taken[v_k] + 1;
      k_update[v_k] := k_update[v_k] OR v_recusas > 0;
      v_recusas := 0;
    END IF;
    IF v_outcome <> 'ok' THEN
      -- A refusal for limits counts towards suspension (contract §5.5); twenty in a row suspend.
      v_recusas := v_recusas + 1;
      k_update[v_k] := true;
      IF v_recusas >= 20 THEN
        v_suspensa := v_now + interval '15 minutes';
        v_suspended_now := v_suspensa;
        k_suspended[v_k] := true;
      END IF;
    END IF;

    -- Headers (contract §8.3): every ceiling with what is left of it after this request.
    v_out[x.i] := json_build_object(
      'outcome', v_outcome, 'reason', v_reason, 'conta_id', x.conta_id, 'chave_id', x.chave_id,
      'usuario_id', x.usuario_id, 'plano_id', x.plano_id, 'permissoes', x.permissoes,
      'slot_held', v_outcome = 'ok', 'retry_after', v_retry, 'suspended_until', v_suspended_now,
      'window_start', CASE WHEN v_outcome = 'ok' THEN v_win END, 'mes', CASE WHEN v_outcome = 'ok' THEN v_mes END,
      'rajada_q', x.rajada, 'rajada_w', ceil(x.rajada::numeric / x.rajada_recarga_por_segundo)::int,
      'rajada_r', floor(v_tokens)::int, 'rajada_t', ceil((x.rajada - v_tokens) / x.rajada_recarga_por_segundo)::int,
      'minuto_q', x.minuto_q, 'minuto_r', greatest(0, x.minuto_q - v_used),
      'minuto_t', ceil(extract(epoch FROM v_win + interval '1 minute' - v_now))::int,
      'mes_q', x.chamadas_por_mes, 'mes_r', greatest(0, x.chamadas_por_mes - v_month),
      'mes_t', ceil(extract(epoch FROM v_next_month - v_now))::int)::text;
  END LOOP;
  IF v_chave IS NOT NULL THEN
    k_tokens[v_k] := v_tokens; k_inflight[v_k] := v_key_slots; k_recusas[v_k] := v_recusas; k_suspensa[v_k] := v_suspensa;
  END IF;
  v_key_updates := true = ANY (k_update);

  -- Every counter the batch moved, in one statement. A bucket is written only when a request took
  -- from it (a refusal leaves it as it was, to refill on); a slot row that had expired belonged to
  -- this process while it looked dead: it starts over. uso_mensal, the one logged table, is written
  -- only when a block is charged: the other admissions write no WAL and their commits wait for no
  -- flush.
  WITH keys AS (
    SELECT * FROM unnest(k_chave, k_conta, k_tokens, k_refreshed, k_taken) AS t(chave_id, conta_id, tokens, refreshed_at, taken)
  ), accounts AS (
    SELECT * FROM unnest(a_conta, a_win_l, a_used_l, a_win_e, a_used_e, a_month, a_charged, a_unspent)
                  AS t(conta_id, win_l, used_l, win_e, used_e, month_add, charged, unspent)
  ), slots AS (
    SELECT chave_id, conta_id, sum(taken)::int AS taken, sum(released)::int AS released
      FROM (SELECT chave_id, conta_id, taken, 0 AS released FROM keys WHERE taken > 0
            UNION ALL
            SELECT chave_id, conta_id, 0, 1 FROM unnest(p_release_chaves, p_release_contas) AS r(chave_id, conta_id)) d
     GROUP BY chave_id, conta_id
  ), bucket AS (
    INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at)
    SELECT conta_id, chave_id, tokens, refreshed_at FROM keys WHERE taken > 0
    ON CONFLICT (chave_id) DO UPDATE SET tokens = excluded.tokens, refreshed_at = excluded.refreshed_at
  ), minute AS (
    INSERT INTO minute_windows (conta_id, classe, window_start, used)
    SELECT conta_id, 'leitura', win_l, used_l FROM accounts WHERE used_l IS NOT NULL
    UNION ALL
    SELECT conta_id, 'escrita', win_e, used_e FROM accounts WHERE used_e IS NOT NULL
    ON CONFLICT (conta_id, classe) DO UPDATE SET window_start = excluded.window_start, used = excluded.used
  ), month AS (
    INSERT INTO uso_mensal (conta_id, mes, chamadas)
    SELECT conta_id, v_mes, month_add FROM accounts WHERE month_add > 0
    ON CONFLICT (conta_id, mes) DO UPDATE SET chamadas = uso_mensal.chamadas + excluded.chamadas
  ), advance AS (
    INSERT INTO month_advances (conta_id, mes, charged, unspent)
    SELECT conta_id, v_mes, charged, unspent FROM accounts WHERE unspent IS NOT NULL
    ON CONFLICT (conta_id, mes) DO UPDATE SET charged = excluded.charged, unspent = excluded.unspent
  )
  INSERT INTO request_slots AS s (holder, chave_id, conta_id, in_flight, expires_at)
  SELECT p_holder, chave_id, conta_id, taken, CASE WHEN taken > 0 THEN v_now + interval '30 seconds' ELSE v_now END
    FROM slots
  ON CONFLICT (holder, chave_id) DO UPDATE
    SET in_flight = greatest(0, CASE WHEN s.expires_at > v_now THEN s.in_flight ELSE 0 END + excluded.in_flight
                                - (SELECT slots.released FROM slots WHERE slots.chave_id = excluded.chave_id)),
        expires_at = greatest(s.expires_at, excluded.expires_at);

  -- Refusal counts, suspensions, the last use (kept to the minute: it is for people, not rules),
  -- and the e-mail to the creator of a key suspended now.
  IF v_key_updates THEN
    WITH changed AS (
      UPDATE chaves_api ch
         SET recusas_consecutivas = t.recusas, suspensa_ate = t.suspensa,
             ultimo_uso_em = CASE WHEN t.taken > 0 THEN v_now ELSE ch.ultimo_uso_em END
        FROM unnest(k_chave, k_conta, k_recusas, k_suspensa, k_taken, k_update, k_suspended)
             AS t(chave_id, conta_id, recusas, suspensa, taken, changed, suspended_now)
       WHERE t.changed AND ch.conta_id = t.conta_id AND ch.id = t.chave_id
      RETURNING ch.conta_id, ch.usuario_id, ch.nome, ch.prefixo, ch.suspensa_ate, t.suspended_now
    )
    INSERT INTO outgoing_emails (conta_id, kind, to_address, subject, body)
    SELECT c.conta_id, 'chave_suspensa', u.email,
           'Chave de API ' || c.prefixo || ' suspensa por 15 minutos',
           'A chave de API "' || c.nome || '" (prefixo ' || c.prefixo || ') recebeu 20 recusas seguidas por limite de uso'
           || ' e ficará suspensa até ' || to_char(c.suspensa_ate AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC.'
           || E'\n\nRespeite o cabeçalho Retry-After das respostas 429 para evitar novas suspensões.'
      FROM changed c JOIN usuarios u ON u.conta_id = c.conta_id AND u.id = c.usuario_id
     WHERE c.suspended_now;
  END IF;

  RETURN '[' || array_to_string(v_out, ',') || ']';
END $$;

-- Refunds of the month go back to the advance, with no durable write either.
CREATE OR REPLACE FUNCTION api_settle(
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
