-- Admission: the one place that decides whether requests may run and charges them (contract §5,
-- §8; docs/design.md, "A read"). A web process sends every request waiting at a moment in one
-- call, with the slot releases of the requests it finished meanwhile; a request alone is a call of
-- one. Each request is decided exactly as it would be alone, one after another within its account:
-- authentication, authorization, then every ceiling for its cost (the rules:
-- sql/code/admission_rules.sql).
--
-- What it costs PostgreSQL is a fixed number of small statements per call, whatever its size: lock
-- the accounts, read every request with its key and counters, decide each request in turn in
-- memory, write every counter moved (and, only when some request needs it, mark keys used or
-- suspended, and charge the month's next block).

CREATE FUNCTION api_admit(
  p_hashes bytea[],         -- per request: SHA-256 of the presented token
  p_escopos text[],         -- the scope the route needs (NULL: none)
  p_permissoes text[],      -- the permission the key's creator must hold (NULL: none)
  p_custos int[],           -- cost units of §8.2 (burst and minute: at most the burst's size)
  p_custos_mes int[],       -- units of the month when not p_custos (0: free there; a batch: all it carries), or NULL
  p_classes text[],         -- leitura | escrita: the per-minute counter charged
  p_provas jsonb,           -- per request, what shows it may be a repetition (admission_repeticao), or NULL
  p_holder text,            -- the process serving the requests
  p_release_contas uuid[],  -- requests this process finished since its last call, whose slots are
  p_release_chaves uuid[],  -- given back here (account and key of each)
  -- A top-up: the rest of the price of requests already admitted and in flight (a list GET charged
  -- as a repetition whose list had changed): no slot of their own, none counted.
  p_sem_vaga boolean DEFAULT false,
  -- Per request, the record a GET of one record reads (its table and id), or NULL: read here when the
  -- request is admitted, so that it needs no round trip of its own (sql/code/representacoes.sql).
  p_tabelas text[] DEFAULT NULL,
  p_ids uuid[] DEFAULT NULL
) RETURNS text              -- one line per request, in their order (admission_answer), and the record read
LANGUAGE plpgsql
-- Its statement joins a dozen tables: planned once per connection, not at every call (a custom plan
-- costs more than the call it plans for), never compiled (JIT would cost more than the call), and
-- every lookup by key whatever the statistics said when the connection planned it.
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
SET enable_memoize = off
AS $$
DECLARE
  v_now timestamptz := now();
  v_window timestamptz := admission_window(v_now);
  v_month_start date := admission_month(v_now);
  v_next_month timestamptz := admission_month_end(v_now);
  v_month_t int := ceil(extract(epoch FROM v_next_month - v_now))::int;
  v_month_text text := v_month_start::text;
  -- A minute window, as the answers give it: its start (epoch seconds) and the seconds left of it.
  v_window_epoch bigint := extract(epoch FROM v_window)::bigint;
  v_now_epoch float8 := extract(epoch FROM v_now)::float8;
  v_win_epoch bigint; v_minute_t int;
  v_out text[] := array_fill(NULL::text, ARRAY[cardinality(p_hashes)]);
  x record;
  v_refusal text; v_limite text; v_retry int; v_custo int; v_custo_mes int; v_classe text; v_minuto_q int;
  v_used int; v_win timestamptz; v_suspended_now timestamptz;
  -- The account being decided (requests come grouped by account, in the order asked) and its counters.
  v_conta uuid;
  a int := 0;
  v_win_l timestamptz; v_used_l int; v_win_e timestamptz; v_used_e int; v_account_slots int;
  -- The month: units used, units charged to monthly_usage, and what is left of the advance.
  v_month int; v_charged int; v_unspent int; v_block int;
  -- The key being decided and its state; k keys seen so far, the account's from v_first_key on.
  v_chave uuid;
  v_k int;
  k int := 0;
  v_first_key int;
  v_tokens double precision; v_key_slots int; v_recusas int; v_suspensa timestamptz; v_caller text;
  -- What the call writes back: one entry per account and per key it decided.
  a_conta uuid[] := '{}'::uuid[]; a_block int[] := '{}'::int[]; a_charged int[] := '{}'::int[]; a_unspent int[] := '{}'::int[];
  v_took_l boolean; v_took_e boolean; v_advances int := 0;
  k_chave uuid[] := '{}'::uuid[]; k_conta uuid[] := '{}'::uuid[]; k_tokens double precision[] := '{}'::double precision[]; k_refreshed timestamptz[] := '{}'::timestamptz[];
  k_taken int[] := '{}'::int[]; k_recusas int[] := '{}'::int[]; k_suspensa timestamptz[] := '{}'::timestamptz[]; k_update boolean[] := '{}'::boolean[];
  k_suspended boolean[] := '{}'::boolean[]; k_inflight int[] := '{}'::int[]; k_caller text[] := '{}'::text[];
  -- Of a key suspended by this call: the limit and the Retry-After of the refusal that did it.
  k_limite text[] := '{}'::text[]; k_retry int[] := '{}'::int[];
  v_key_updates boolean := false;
  v_blocks boolean := false;
  -- The minute windows the call moved (one per account and class), and how many buckets it took from.
  m_conta uuid[] := '{}'::uuid[]; m_classe text[] := '{}'::text[]; m_window timestamptz[] := '{}'::timestamptz[]; m_used int[] := '{}'::int[];
  v_buckets int := 0;
  v_missing_bucket boolean; v_missing_minute boolean; v_missing_advance boolean; v_missing_slot boolean;
  -- The records to read: for each admitted request that asked for one, its position, table, account,
  -- id and its caller's permissions (comma-separated); y, each one read.
  r_i int[] := '{}'::int[]; r_tabela text[] := '{}'::text[]; r_conta uuid[] := '{}'::uuid[]; r_id uuid[] := '{}'::uuid[];
  r_permissoes text[] := '{}'::text[];
  y record;
  -- The requests' probes, read out of their json once: a POST's Idempotency-Key and path, looked up
  -- inline; any other probe (GETs) through admission_repeticao.
  p_idem_chaves text[]; p_idem_rotas text[]; p_outras_provas jsonb[];
BEGIN
  IF p_provas IS NOT NULL AND jsonb_path_exists(p_provas, '$[*] ? (@ != null)') THEN
    SELECT array_agg(e ->> 'chave' ORDER BY o), array_agg(e ->> 'rota' ORDER BY o),
           array_agg(CASE WHEN e ? 'chave' OR jsonb_typeof(e) <> 'object' THEN NULL ELSE e END ORDER BY o)
      INTO p_idem_chaves, p_idem_rotas, p_outras_provas
      FROM jsonb_array_elements(p_provas) WITH ORDINALITY AS x(e, o);
  END IF;

  -- Requests of one account are decided one at a time across every process: a call takes the locks
  -- of its accounts, and of the accounts whose slots it gives back, in one order, so calls never
  -- wait on each other in a circle. Every writer of these counters holds the lock. A key that is no
  -- longer valid (revoked, expired) takes no lock: its 401 waits for nobody.
  PERFORM pg_advisory_xact_lock(conta_lock_key(l.conta_id))
     FROM (SELECT ch.conta_id FROM chaves_api ch
            WHERE ch.token_hash = ANY (p_hashes) AND ch.revogada_em IS NULL AND (ch.expira_em IS NULL OR ch.expira_em > v_now)
           UNION
           SELECT u.conta_id FROM unnest(p_release_contas) AS u(conta_id)
           ORDER BY 1) l;

  -- Read after the locks (a statement of its own: its snapshot sees what the previous holder of a
  -- lock committed). Counters are read with every request; within an account only the first reading
  -- is used, then carried from request to request.
  FOR x IN
    SELECT h.i::int AS i, h.escopo, h.permissao, h.custo, p_custos_mes[h.i] AS custo_mes, h.classe, k.*,
           ik.feita IS TRUE OR (p_outras_provas[h.i] IS NOT NULL AND admission_repeticao(k.conta_id, p_outras_provas[h.i])) AS repeticao,
           b.tokens, b.refreshed_at, w.win_l, w.used_l, w.win_e, w.used_e, m.calls AS month_charged, m.unspent AS month_unspent,
           s.key_slots, s.account_slots
      FROM unnest(p_hashes, p_escopos, p_permissoes, p_custos, p_classes) WITH ORDINALITY AS h(hash, escopo, permissao, custo, classe, i)
      -- Each lookup is its own subquery (LIMIT 1: never merged into one big join), so it stays an index
      -- lookup by the row before it whatever the tables' statistics say.
      LEFT JOIN LATERAL (
        SELECT ch.id AS chave_id, ch.conta_id, ch.usuario_id, ch.escopos, ch.suspensa_ate, ch.recusas_consecutivas,
               ch.ultimo_uso_em, c.plano_id, c.bloqueada, c.api_ativa,
               CASE WHEN u.ativo THEN u.permissoes ELSE '{}'::text[] END AS permissoes, u.ativo AS criador_ativo,
               p.api_disponivel, p.rajada, p.rajada_recarga_por_segundo, p.simultaneas_por_chave, p.simultaneas_por_conta,
               p.chamadas_por_mes, p.leituras_por_minuto, p.escritas_por_minuto, (SELECT api_enabled FROM platform) AS api_enabled
          FROM chaves_api ch
          JOIN contas c ON c.id = ch.conta_id
          JOIN planos p ON p.id = c.plano_id
          JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
         WHERE ch.token_hash = h.hash AND ch.revogada_em IS NULL AND (ch.expira_em IS NULL OR ch.expira_em > v_now)
         LIMIT 1) k ON true
      -- A completed record of the request's Idempotency-Key on its path that outlives its claim
      -- (admission_repeticao says why a minute), found by its primary key alone: with the expiry in its
      -- WHERE, a plan made on an empty table read the expiry index, every live key of every account.
      LEFT JOIN LATERAL (SELECT i.route = p_idem_rotas[h.i] AND i.expires_at > v_now + interval '1 minute' AS feita
                           FROM idempotency_keys i
                          WHERE i.conta_id = k.conta_id AND i.chave_id = k.chave_id AND i.key = p_idem_chaves[h.i]
                          LIMIT 1) ik ON p_idem_chaves[h.i] IS NOT NULL
      LEFT JOIN LATERAL (SELECT tokens, refreshed_at FROM rate_buckets WHERE chave_id = k.chave_id LIMIT 1) b ON true
      LEFT JOIN LATERAL (SELECT max(window_start) FILTER (WHERE classe = 'leitura') AS win_l, max(used) FILTER (WHERE classe = 'leitura') AS used_l,
                                max(window_start) FILTER (WHERE classe = 'escrita') AS win_e, max(used) FILTER (WHERE classe = 'escrita') AS used_e
                           FROM minute_windows WHERE conta_id = k.conta_id) w ON true
      LEFT JOIN LATERAL (SELECT u.calls, ma.unspent FROM monthly_usage u
                           LEFT JOIN month_advances ma ON ma.conta_id = u.conta_id AND ma.month = u.month AND ma.charged = u.calls
                          WHERE u.conta_id = k.conta_id AND u.month = v_month_start LIMIT 1) m ON true
      LEFT JOIN LATERAL (SELECT coalesce(sum(rs.in_flight) FILTER (WHERE rs.chave_id = k.chave_id), 0)::int AS key_slots,
                                coalesce(sum(rs.in_flight), 0)::int AS account_slots
                           FROM request_slots rs WHERE rs.conta_id = k.conta_id AND rs.expires_at > v_now) s ON true
     ORDER BY k.conta_id, h.i
  LOOP
    IF x.chave_id IS NULL THEN
      v_out[x.i] := 'nao_autenticado';
      CONTINUE;
    END IF;

    IF v_conta IS DISTINCT FROM x.conta_id THEN
      -- The minute windows the previous account moved.
      IF v_took_l THEN m_conta := m_conta || v_conta; m_classe := m_classe || 'leitura'::text; m_window := m_window || v_win_l; m_used := m_used || v_used_l; END IF;
      IF v_took_e THEN m_conta := m_conta || v_conta; m_classe := m_classe || 'escrita'::text; m_window := m_window || v_win_e; m_used := m_used || v_used_e; END IF;
      v_took_l := false;
      v_took_e := false;
      v_conta := x.conta_id;
      a := a + 1;
      v_first_key := k + 1;
      -- A window newer than this transaction's clock was opened by a call that started later but took
      -- the lock first: it is the current one.
      v_win_l := greatest(x.win_l, v_window);
      v_used_l := CASE WHEN x.win_l >= v_window THEN x.used_l ELSE 0 END;
      v_win_e := greatest(x.win_e, v_window);
      v_used_e := CASE WHEN x.win_e >= v_window THEN x.used_e ELSE 0 END;
      v_charged := coalesce(x.month_charged, 0);
      v_unspent := coalesce(x.month_unspent, 0);
      v_month := v_charged - v_unspent;
      -- The slots count without those this call gives back.
      v_account_slots := CASE WHEN p_sem_vaga THEN 0
                              ELSE greatest(0, x.account_slots - cardinality(array_positions(p_release_contas, v_conta))) END;
      -- Every per-account array gets this account's entry now: they are unnested side by side.
      a_conta[a] := v_conta; a_block[a] := 0; a_charged[a] := v_charged; a_unspent[a] := NULL;
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
        v_key_slots := CASE WHEN p_sem_vaga THEN 0
                            ELSE greatest(0, x.key_slots - cardinality(array_positions(p_release_chaves, v_chave))) END;
        v_recusas := x.recusas_consecutivas;
        v_suspensa := x.suspensa_ate;
        v_caller := admission_caller(x.conta_id, x.chave_id, x.usuario_id, x.plano_id, x.permissoes);
        k_chave[k] := v_chave; k_conta[k] := v_conta; k_refreshed[k] := greatest(x.refreshed_at, v_now); k_caller[k] := v_caller;
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
        v_caller := k_caller[v_k];
      END IF;
    END IF;

    v_refusal := admission_refusal(x.bloqueada, x.api_ativa, x.api_disponivel, v_suspensa, x.escopo, x.escopos,
                                   x.permissao, x.permissoes, x.criador_ativo, x.api_enabled);
    IF v_refusal IS NOT NULL THEN
      v_out[x.i] := admission_refused(v_refusal, v_caller, v_suspensa);
      CONTINUE;
    END IF;

    -- Limits: every ceiling of the plan for this request's cost; a repetition costs 1 in the burst,
    -- 0 in the month, and counts as a read (contract §8.2).
    v_classe := CASE WHEN x.repeticao THEN 'leitura' ELSE x.classe END;
    v_custo := CASE WHEN x.repeticao THEN 1 ELSE least(x.custo, x.rajada) END;
    v_custo_mes := CASE WHEN x.repeticao THEN 0 ELSE coalesce(x.custo_mes, v_custo) END;
    IF v_classe = 'escrita' THEN
      v_used := v_used_e; v_win := v_win_e; v_minuto_q := x.escritas_por_minuto;
    ELSE
      v_used := v_used_l; v_win := v_win_l; v_minuto_q := x.leituras_por_minuto;
    END IF;
    -- A window newer than this call's (see above) has its own start and seconds left.
    IF v_win = v_window THEN
      v_win_epoch := v_window_epoch;
    ELSE
      v_win_epoch := extract(epoch FROM v_win)::bigint;
    END IF;
    v_minute_t := ceil(v_win_epoch + 60 - v_now_epoch)::int;
    v_retry := NULL;
    v_suspended_now := NULL;
    v_limite := admission_limit(v_custo, v_custo_mes, v_key_slots, v_account_slots, v_tokens, v_used, v_month,
                                x.simultaneas_por_chave, x.simultaneas_por_conta, v_minuto_q, x.chamadas_por_mes);
    IF v_limite IS NULL THEN
      v_tokens := v_tokens - v_custo;
      v_used := v_used + v_custo;
      IF v_classe = 'escrita' THEN v_used_e := v_used; v_took_e := true; ELSE v_used_l := v_used; v_took_l := true; END IF;
      v_month := v_month + v_custo_mes;
      -- Spent from the advance; when it runs short, monthly_usage is charged the next block in this
      -- same transaction.
      v_block := admission_month_block(v_custo_mes, v_charged, v_unspent, x.chamadas_por_mes);
      IF v_block > 0 THEN
        v_charged := v_charged + v_block;
        a_block[a] := a_block[a] + v_block;
        a_charged[a] := v_charged;
        v_blocks := true;
      END IF;
      v_unspent := v_unspent + v_block - v_custo_mes;
      IF a_unspent[a] IS NULL THEN
        v_advances := v_advances + 1;
      END IF;
      a_unspent[a] := v_unspent;
      IF NOT p_sem_vaga THEN
        v_key_slots := v_key_slots + 1;
        v_account_slots := v_account_slots + 1;
      END IF;
      IF k_taken[v_k] = 0 THEN
        v_buckets := v_buckets + 1;
      END IF;
      k_taken[v_k] := k_taken[v_k] + 1;
      IF v_recusas > 0 THEN
        k_update[v_k] := true;
        v_recusas := 0;
      END IF;
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
    v_out[x.i] := admission_answer(v_limite, v_retry, v_suspended_now, x.repeticao, v_caller, v_win_epoch, v_minute_t, v_month_text,
                                   x.rajada, x.rajada_recarga_por_segundo, v_tokens, v_minuto_q, v_used, x.chamadas_por_mes, v_month, v_month_t);
    -- A repetition (a 304 admission confirmed) needs no body.
    IF v_limite IS NULL AND p_tabelas[x.i] IS NOT NULL AND NOT x.repeticao THEN
      r_i := r_i || x.i; r_tabela := r_tabela || p_tabelas[x.i]; r_conta := r_conta || v_conta; r_id := r_id || p_ids[x.i];
      r_permissoes := r_permissoes || array_to_string(x.permissoes, ',');
    END IF;
  END LOOP;
  IF v_chave IS NOT NULL THEN
    k_tokens[v_k] := v_tokens; k_inflight[v_k] := v_key_slots; k_recusas[v_k] := v_recusas; k_suspensa[v_k] := v_suspensa;
  END IF;
  IF v_took_l THEN m_conta := m_conta || v_conta; m_classe := m_classe || 'leitura'::text; m_window := m_window || v_win_l; m_used := m_used || v_used_l; END IF;
  IF v_took_e THEN m_conta := m_conta || v_conta; m_classe := m_classe || 'escrita'::text; m_window := m_window || v_win_e; m_used := m_used || v_used_e; END IF;
  v_key_updates := true = ANY (k_update);

  -- Every counter the call moved, in one statement of plain UPDATEs: the rows exist after an
  -- account's or key's first request. When an UPDATE finds fewer rows than it was given (a first
  -- request, or counters lost in a crash: they are UNLOGGED), its rows go again as an upsert. A bucket
  -- is written only when a request took from it (a refusal leaves it as it was, to refill on); a
  -- slot row that had expired belonged to this process while it looked dead: it starts over.
  WITH bucket AS (
    UPDATE rate_buckets b SET tokens = t.tokens, refreshed_at = t.refreshed_at
      FROM unnest(k_chave, k_tokens, k_refreshed, k_taken) AS t(chave_id, tokens, refreshed_at, taken)
     WHERE t.taken > 0 AND b.chave_id = t.chave_id
    RETURNING 1
  ), minute AS (
    UPDATE minute_windows w SET window_start = t.window_start, used = t.used
      FROM unnest(m_conta, m_classe, m_window, m_used) AS t(conta_id, classe, window_start, used)
     WHERE w.conta_id = t.conta_id AND w.classe = t.classe
    RETURNING 1
  ), advance AS (
    UPDATE month_advances m SET charged = t.charged, unspent = t.unspent
      FROM unnest(a_conta, a_charged, a_unspent) AS t(conta_id, charged, unspent)
     WHERE t.unspent IS NOT NULL AND m.conta_id = t.conta_id AND m.month = v_month_start
    RETURNING 1
  ), slot AS (
    SELECT chave_id, sum(taken)::int AS taken, sum(released)::int AS released
      FROM (SELECT t.chave_id, t.taken, 0 AS released FROM unnest(k_chave, k_taken) AS t(chave_id, taken) WHERE t.taken > 0 AND NOT p_sem_vaga
            UNION ALL
            SELECT r.chave_id, 0, 1 FROM unnest(p_release_chaves) AS r(chave_id)) d
     GROUP BY chave_id
  ), slots AS (
    UPDATE request_slots s
       SET in_flight = greatest(0, CASE WHEN s.expires_at > v_now THEN s.in_flight ELSE 0 END + t.taken - t.released),
           expires_at = greatest(s.expires_at, CASE WHEN t.taken > 0 THEN v_now + interval '30 seconds' ELSE v_now END)
      FROM slot t
     WHERE s.holder = p_holder AND s.chave_id = t.chave_id
    RETURNING 1
  )
  SELECT (SELECT count(*) FROM bucket) < v_buckets, (SELECT count(*) FROM minute) < cardinality(m_conta),
         (SELECT count(*) FROM advance) < v_advances, (SELECT count(*) FROM slots) < (SELECT count(*) FROM slot)
    INTO v_missing_bucket, v_missing_minute, v_missing_advance, v_missing_slot;

  IF v_missing_bucket THEN
    INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at)
    SELECT t.conta_id, t.chave_id, t.tokens, t.refreshed_at
      FROM unnest(k_chave, k_conta, k_tokens, k_refreshed, k_taken) AS t(chave_id, conta_id, tokens, refreshed_at, taken)
     WHERE t.taken > 0
    ON CONFLICT (chave_id) DO UPDATE SET tokens = excluded.tokens, refreshed_at = excluded.refreshed_at;
  END IF;
  IF v_missing_minute THEN
    INSERT INTO minute_windows (conta_id, classe, window_start, used)
    SELECT * FROM unnest(m_conta, m_classe, m_window, m_used)
    ON CONFLICT (conta_id, classe) DO UPDATE SET window_start = excluded.window_start, used = excluded.used;
  END IF;
  IF v_missing_advance THEN
    INSERT INTO month_advances (conta_id, month, charged, unspent)
    SELECT t.conta_id, v_month_start, t.charged, t.unspent FROM unnest(a_conta, a_charged, a_unspent) AS t(conta_id, charged, unspent)
     WHERE t.unspent IS NOT NULL
    ON CONFLICT (conta_id, month) DO UPDATE SET charged = excluded.charged, unspent = excluded.unspent;
  END IF;
  IF v_missing_slot THEN
    -- A key new to this process: its row, with what this call took (a release of a row that is not
    -- there has nothing to give back).
    INSERT INTO request_slots (holder, chave_id, conta_id, in_flight, expires_at)
    SELECT p_holder, t.chave_id, t.conta_id, t.taken, v_now + interval '30 seconds'
      FROM unnest(k_chave, k_conta, k_taken) AS t(chave_id, conta_id, taken) WHERE t.taken > 0 AND NOT p_sem_vaga
    ON CONFLICT (holder, chave_id) DO NOTHING;
  END IF;

  -- monthly_usage, the one logged table, is written only when a block is charged: the other
  -- admissions write no WAL and their commits wait for no flush.
  IF v_blocks THEN
    INSERT INTO monthly_usage AS u (conta_id, month, calls)
    SELECT t.conta_id, v_month_start, t.block FROM unnest(a_conta, a_block) AS t(conta_id, block) WHERE t.block > 0
    ON CONFLICT (conta_id, month) DO UPDATE SET calls = u.calls + excluded.calls;
  END IF;

  -- Refusal counts, suspensions, the last use (kept to the minute: it is for people, not rules), and
  -- the e-mail to the creator of a key suspended now.
  IF v_key_updates THEN
    UPDATE chaves_api ch
       SET recusas_consecutivas = t.recusas, suspensa_ate = t.suspensa,
           ultimo_uso_em = CASE WHEN t.taken > 0 THEN v_now ELSE ch.ultimo_uso_em END
      FROM unnest(k_chave, k_conta, k_recusas, k_suspensa, k_taken, k_update) AS t(chave_id, conta_id, recusas, suspensa, taken, changed)
     WHERE t.changed AND ch.conta_id = t.conta_id AND ch.id = t.chave_id;
    PERFORM record_suspension(t.conta_id, t.chave_id, t.suspensa, t.limite, t.retry, t.recusas)
       FROM unnest(k_chave, k_conta, k_suspensa, k_suspended, k_limite, k_retry, k_recusas)
            AS t(chave_id, conta_id, suspensa, suspended_now, limite, retry, recusas)
      WHERE t.suspended_now;
  END IF;

  -- The records the admitted requests read, each appended to its line: "|version|body", or "||" for
  -- a record the account does not have (a 404). A body is JSON without a line break.
  IF cardinality(r_i) > 0 THEN
    FOR y IN
      SELECT q.i, r.versao, r.corpo
        FROM unnest(r_i, r_tabela, r_conta, r_id, r_permissoes) AS q(i, tabela, conta_id, id, permissoes)
        LEFT JOIN LATERAL representacao(q.tabela, q.conta_id, q.id, string_to_array(q.permissoes, ',')) r ON true
    LOOP
      v_out[y.i] := concat(v_out[y.i], '|', y.versao, '|', y.corpo);
    END LOOP;
  END IF;

  RETURN array_to_string(v_out, E'\n');
END $$;

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
-- fewer products than limite): rows of (chave_id, conta_id, classe, window_start, month_start,
-- burst, minute, month) refunds, applied in one call per batch, off the request path. Refunds of the month
-- go back to the advance, with no durable write either.
CREATE FUNCTION api_settle(
  p_chave_id uuid[], p_conta_id uuid[], p_classe text[], p_window timestamptz[], p_month_start date[],
  p_burst int[], p_minute int[], p_month int[], p_read_charge int[]
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- The same per-account lock as admission, which writes these rows from values it read; taken in
  -- one order so two settling processes never deadlock.
  PERFORM pg_advisory_xact_lock(conta_lock_key(conta_id))
     FROM (SELECT DISTINCT conta_id FROM unnest(p_conta_id) AS x(conta_id) ORDER BY conta_id) a;

  WITH s AS (
    SELECT * FROM unnest(p_chave_id, p_conta_id, p_classe, p_window, p_month_start, p_burst, p_minute, p_month, p_read_charge)
      AS x(chave_id, conta_id, classe, window_start, month_start, burst, minute, month, read_charge)
  ), burst AS (
    UPDATE rate_buckets b SET tokens = least(g.capacity, b.tokens + g.burst)
      FROM (SELECT s.chave_id, sum(s.burst) AS burst, min(p.rajada) AS capacity
              FROM s JOIN contas c ON c.id = s.conta_id JOIN planos p ON p.id = c.plano_id
             WHERE s.burst > 0 GROUP BY s.chave_id) g
     WHERE b.chave_id = g.chave_id
  ), month AS (
    -- Given back to the month's advance: spent by the next admissions without a durable write
    -- (monthly_usage already counts it), or, if a crash forgets it, left counted.
    -- An advance that no longer agrees with monthly_usage (set by hand) starts over from the refund.
    INSERT INTO month_advances AS a (conta_id, month, charged, unspent)
    SELECT g.conta_id, g.month_start, u.calls, least(g.month, u.calls)
      FROM (SELECT conta_id, month_start, sum(month)::int AS month FROM s WHERE month > 0 GROUP BY conta_id, month_start) g
      JOIN monthly_usage u ON u.conta_id = g.conta_id AND u.month = g.month_start
    ON CONFLICT (conta_id, month) DO UPDATE
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
CREATE VIEW effective_monthly_usage AS
SELECT u.conta_id, u.month, u.calls - coalesce(a.unspent, 0) AS calls, coalesce(a.unspent, 0) AS unspent
  FROM monthly_usage u
  LEFT JOIN month_advances a ON a.conta_id = u.conta_id AND a.month = u.month AND a.charged = u.calls;
