-- Admission in batches (DESIGN §3.3, §5). A web process sends every request waiting for admission
-- in one round trip: the statements of admission run once per batch, not once per request, and one
-- commit serves all of them. Each request is decided exactly as it would be alone, one after
-- another within its account.
--
-- The same few statements whatever the batch's size: lock the accounts, read every request with its
-- key, account, plan and counters, write every counter moved (and, only when some request needs
-- it, read the probes out of their json, mark keys used or suspended, record a suspension). Measured (BENCHMARKS.md): per-request
-- admission spent most of its database time in the fixed cost of statements, round trips and
-- commits, not in the work.

CREATE FUNCTION api_admit_many(
  p_hashes bytea[],         -- per request: SHA-256 of the presented token
  p_escopos text[],         -- the scope the route needs (NULL: none)
  p_permissoes text[],      -- the permission the key's creator must hold (NULL: none)
  p_custos int[],           -- cost units of §8.2 (burst and minute: at most the burst's size)
  p_custos_mes int[],       -- units of the month when not p_custos (0: free there; a batch: all it carries), or null
  p_classes text[],         -- leitura | escrita: the per-minute counter charged
  p_provas jsonb,           -- per request, what shows it may be a repetition (admission_repeticao), or null
  p_holder text,            -- the process serving the requests
  p_release_contas uuid[],  -- requests this process finished since its last batch, whose slots
  p_release_chaves uuid[]   -- are given back here (account and key of each)
) RETURNS text
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
  v_window timestamptz := admission_window(v_now);
  v_mes date := admission_month(v_now);
  v_next_month timestamptz := admission_month_end(v_now);
  v_out text[] := array_fill(NULL::text, ARRAY[cardinality(p_hashes)]);
  x record;
  v_refusal text; v_limite text; v_retry int; v_custo int; v_custo_mes int; v_classe text; v_minuto_q int;
  v_used int; v_win timestamptz; v_suspended_now timestamptz;
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
  a_conta uuid[] := '{}'::uuid[];
  a_win_l timestamptz[] := '{}'::timestamptz[]; a_used_l int[] := '{}'::int[];
  a_win_e timestamptz[] := '{}'::timestamptz[]; a_used_e int[] := '{}'::int[];
  a_month int[] := '{}'::int[]; a_charged int[] := '{}'::int[]; a_unspent int[] := '{}'::int[];
  k_chave uuid[] := '{}'::uuid[]; k_conta uuid[] := '{}'::uuid[];
  k_tokens double precision[] := '{}'::double precision[]; k_refreshed timestamptz[] := '{}'::timestamptz[];
  k_taken int[] := '{}'::int[]; k_recusas int[] := '{}'::int[]; k_suspensa timestamptz[] := '{}'::timestamptz[];
  k_update boolean[] := '{}'::boolean[]; k_suspended boolean[] := '{}'::boolean[]; k_inflight int[] := '{}'::int[];
  -- Of a key suspended by this batch: the limit and the Retry-After of the refusal that did it.
  k_limite text[] := '{}'::text[]; k_retry int[] := '{}'::int[];
  v_key_updates boolean := false;
  -- The requests' probes (admission_repeticao), read out of their json once: a POST's
  -- Idempotency-Key and path, looked up inline; any other probe (GETs) through the function.
  p_idem_chaves text[]; p_idem_rotas text[]; p_outras_provas jsonb[];
BEGIN
  IF p_provas IS NOT NULL AND jsonb_path_exists(p_provas, '$[*] ? (@ != null)') THEN
    SELECT array_agg(e ->> 'chave' ORDER BY o), array_agg(e ->> 'rota' ORDER BY o),
           array_agg(CASE WHEN e ? 'chave' OR jsonb_typeof(e) <> 'object' THEN NULL ELSE e END ORDER BY o)
      INTO p_idem_chaves, p_idem_rotas, p_outras_provas
      FROM jsonb_array_elements(p_provas) WITH ORDINALITY AS x(e, o);
  END IF;

  -- Requests of one account are decided one at a time across every process: a batch takes the
  -- locks of its accounts, and of the accounts whose slots it gives back, in one order, so
  -- batches never wait on each other in a circle. Every writer of these counters holds the lock.
  -- A key that is no longer valid (revoked, expired) takes no lock: its 401 waits for nobody.
  PERFORM pg_advisory_xact_lock(conta_lock_key(l.conta_id))
     FROM (SELECT ch.conta_id FROM chaves_api ch
            WHERE ch.token_hash = ANY (p_hashes) AND ch.revogada_em IS NULL AND (ch.expira_em IS NULL OR ch.expira_em > v_now)
           UNION
           SELECT u.conta_id FROM unnest(p_release_contas) AS u(conta_id)
           ORDER BY 1) l;

  -- Read after the locks (a statement of its own: its snapshot sees what the previous holder of a
  -- lock committed). Counters are read with every request; within an account only the first
  -- reading is used, then carried from request to request. Slots count without the releases this
  -- batch carries.
  FOR x IN
    SELECT h.i::int AS i, h.escopo, h.permissao, h.custo, p_custos_mes[h.i] AS custo_mes, h.classe, k.*, (SELECT api_enabled FROM platform) AS api_enabled,
           ik.feita IS TRUE OR (p_outras_provas[h.i] IS NOT NULL
                                    AND admission_repeticao(k.conta_id, p_outras_provas[h.i])) AS repeticao,
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
      -- A completed record of the request's Idempotency-Key on its path that outlives its claim
      -- (admission_repeticao says why a minute). Found by its primary key alone (the LIMIT keeps the
      -- other conditions out): with the expiry in its WHERE, a plan made on an empty table read the
      -- expiry index, every live key of every account.
      LEFT JOIN LATERAL (SELECT i.route = p_idem_rotas[h.i] AND i.expires_at > v_now + interval '1 minute' AS feita
                           FROM idempotency_keys i
                          WHERE i.conta_id = k.conta_id AND i.chave_id = k.chave_id AND i.key = p_idem_chaves[h.i]
                          LIMIT 1) ik ON p_idem_chaves[h.i] IS NOT NULL
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
      -- Every array gets this account's entry now: they are unnested side by side.
      a_conta[a] := v_conta; a_win_l[a] := v_win_l; a_used_l[a] := NULL; a_win_e[a] := v_win_e; a_used_e[a] := NULL;
      a_month[a] := 0; a_charged[a] := v_chamadas; a_unspent[a] := NULL;
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
        v_tokens := admission_tokens(x.tokens, x.refreshed_at, x.rajada, x.rajada_recarga_por_segundo, v_now);
        v_key_slots := greatest(0, x.key_slots);
        v_recusas := x.recusas_consecutivas;
        v_suspensa := x.suspensa_ate;
        k_chave[k] := v_chave; k_conta[k] := v_conta; k_refreshed[k] := greatest(x.refreshed_at, v_now);
        -- Every per-key array gets this key's entry now: they are unnested side by side.
        k_taken[k] := 0; k_suspended[k] := false; k_limite[k] := NULL; k_retry[k] := NULL;
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

    v_refusal := admission_refusal(x.bloqueada, x.api_ativa, x.api_disponivel, v_suspensa, x.escopo, x.escopos,
                                   x.permissao, x.permissoes, x.api_enabled);
    IF v_refusal IS NOT NULL THEN
      v_out[x.i] := admission_refused_json(v_refusal, x.conta_id, x.chave_id, x.usuario_id, x.plano_id, x.permissoes, v_suspensa);
      CONTINUE;
    END IF;

    -- Limits: every ceiling of the plan for this request's cost; a repetition costs 1 in the burst,
    -- 0 in the month, and counts as a read (contract §8.2).
    v_classe := CASE WHEN x.repeticao THEN 'leitura' ELSE x.classe END;
    v_custo := CASE WHEN x.repeticao THEN 1 ELSE least(x.custo, x.rajada) END;
    v_custo_mes := CASE WHEN x.repeticao THEN 0 ELSE coalesce(x.custo_mes, v_custo) END;
    v_minuto_q := CASE WHEN v_classe = 'escrita' THEN x.escritas_por_minuto ELSE x.leituras_por_minuto END;
    IF v_classe = 'escrita' THEN v_used := v_used_e; v_win := v_win_e; ELSE v_used := v_used_l; v_win := v_win_l; END IF;
    v_retry := NULL;
    v_suspended_now := NULL;
    v_limite := admission_limit(v_custo, v_custo_mes, v_key_slots, v_account_slots, v_tokens, v_used, v_month,
                                x.simultaneas_por_chave, x.simultaneas_por_conta, v_minuto_q, x.chamadas_por_mes);
    IF v_limite IS NULL THEN
      v_tokens := v_tokens - v_custo;
      v_used := v_used + v_custo;
      IF v_classe = 'escrita' THEN v_used_e := v_used; a_used_e[a] := v_used; ELSE v_used_l := v_used; a_used_l[a] := v_used; END IF;
      v_month := v_month + v_custo_mes;
      -- Spent from the advance; when it runs short, uso_mensal is charged the next block in this
      -- same transaction.
      v_block := admission_month_block(v_custo_mes, v_chamadas, v_unspent, x.chamadas_por_mes);
      v_chamadas := v_chamadas + v_block;
      v_unspent := v_unspent + v_block - v_custo_mes;
      a_month[a] := a_month[a] + v_block;
      a_charged[a] := v_chamadas;
      a_unspent[a] := v_unspent;
      v_key_slots := v_key_slots + 1;
      v_account_slots := v_account_slots + 1;
      k_taken[v_k] := k_taken[v_k] + 1;
      k_update[v_k] := k_update[v_k] OR v_recusas > 0;
      v_recusas := 0;
    ELSE
      v_retry := admission_retry_after(v_limite, v_custo, v_tokens, x.rajada_recarga_por_segundo, v_win, v_next_month, v_now);
      v_recusas := v_recusas + 1;
      k_update[v_k] := true;
      v_suspended_now := admission_suspension(v_recusas, v_now);
      v_suspensa := v_suspended_now;
      IF v_suspended_now IS NOT NULL THEN
        k_suspended[v_k] := true; k_limite[v_k] := v_limite; k_retry[v_k] := v_retry;
      END IF;
    END IF;
    v_out[x.i] := admission_json(v_limite, v_retry, v_suspended_now, x.repeticao, x.conta_id, x.chave_id, x.usuario_id, x.plano_id,
                                 x.permissoes, v_win, v_mes, v_next_month, v_now, x.rajada, x.rajada_recarga_por_segundo,
                                 v_tokens, v_minuto_q, v_used, x.chamadas_por_mes, v_month);
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
    UPDATE chaves_api ch
       SET recusas_consecutivas = t.recusas, suspensa_ate = t.suspensa,
           ultimo_uso_em = CASE WHEN t.taken > 0 THEN v_now ELSE ch.ultimo_uso_em END
      FROM unnest(k_chave, k_conta, k_recusas, k_suspensa, k_taken, k_update)
           AS t(chave_id, conta_id, recusas, suspensa, taken, changed)
     WHERE t.changed AND ch.conta_id = t.conta_id AND ch.id = t.chave_id;
    PERFORM registrar_suspensao(t.conta_id, t.chave_id, t.suspensa, t.limite, t.retry, t.recusas)
       FROM unnest(k_chave, k_conta, k_suspensa, k_suspended, k_limite, k_retry, k_recusas)
            AS t(chave_id, conta_id, suspensa, suspended_now, limite, retry, recusas)
      WHERE t.suspended_now;
  END IF;

  RETURN '[' || array_to_string(v_out, ',') || ']';
END $$;
