-- A request admitted alone (DESIGN §3.3: admission adds under 1 ms on a quiet machine).
--
-- A quiet web process sends each request as a batch of one. Measured (BENCHMARKS.md), the batch
-- form spent about 0.3 ms of PostgreSQL's time on one request, most of it starting its big
-- statements (unnest, a dozen lateral lookups, a sort, five upserts in one statement) and keeping
-- its per-account and per-key arrays; the same decision in small statements on scalars takes about
-- a quarter of that. So api_admit_batch (admission.sql) sends a batch of one here and a larger batch
-- to api_admit_many (admission_many.sql). The two give the same decision and the same answer:
-- test/limits-paths.test.ts drives every ceiling through both.

CREATE FUNCTION api_admit_one(
  p_hash bytea,             -- SHA-256 of the presented token
  p_escopo text,            -- the scope the route needs (NULL: none)
  p_permissao text,         -- the permission the key's creator must hold (NULL: none)
  p_custo int,              -- cost units of §8.2 (burst and minute: at most the burst's size)
  p_custo_mes int,          -- units of the month when not p_custo (0: free there; a batch: all it carries), or NULL
  p_classe text,            -- leitura | escrita: the per-minute counter charged
  p_prova jsonb,            -- what shows the request may be a repetition (admission_repeticao), or NULL
  p_holder text,            -- the process serving the request
  p_release_contas uuid[],  -- requests this process finished since its last batch (account and
  p_release_chaves uuid[],  -- key of each), whose slots are given back here
  -- A top-up: the rest of the price of a request already admitted and in flight (a list GET charged
  -- as a repetition whose list had changed): no slot of its own, none counted, none given back.
  p_sem_vaga boolean DEFAULT false
) RETURNS text              -- the admission, a json object (see api_admit_many)
LANGUAGE plpgsql
-- As api_admit_many's: planned once per connection, never compiled, every lookup by index.
SET plan_cache_mode = force_generic_plan SET jit = off SET enable_seqscan = off
AS $$
DECLARE
  v_conta uuid;
  k record;
  v_out text;
  v_now timestamptz := now();
  v_window timestamptz := admission_window(v_now);
  v_mes date := admission_month(v_now);
  v_next_month timestamptz := admission_month_end(v_now);
  v_limite text; v_refusal text; v_retry int; v_custo int; v_custo_mes int; v_classe text; v_minuto_q int;
  v_tokens double precision; v_win timestamptz; v_used int;
  v_chamadas int; v_unspent int; v_month int; v_block int := 0;
  v_key_slots int; v_account_slots int; v_released int := 0;
  v_recusas int; v_suspensa timestamptz; v_suspended_now timestamptz; v_key_update boolean;
  v_taken boolean := false;
BEGIN
  -- The account's lock, with the locks of the accounts whose slots are given back, in one order. A
  -- key that is no longer valid (revoked, expired) takes no lock: its 401 waits for nobody, like an
  -- unknown key's.
  SELECT ch.conta_id INTO v_conta FROM chaves_api ch
   WHERE ch.token_hash = p_hash AND ch.revogada_em IS NULL AND (ch.expira_em IS NULL OR ch.expira_em > v_now);
  IF v_conta IS NOT NULL AND (cardinality(p_release_contas) = 0 OR p_release_contas <@ ARRAY[v_conta]) THEN
    PERFORM pg_advisory_xact_lock(conta_lock_key(v_conta));
  ELSIF v_conta IS NOT NULL OR cardinality(p_release_contas) > 0 THEN
    PERFORM pg_advisory_xact_lock(conta_lock_key(l.conta_id))
       FROM (SELECT v_conta AS conta_id WHERE v_conta IS NOT NULL UNION SELECT unnest(p_release_contas) ORDER BY 1) l;
  END IF;

  -- Read after the lock (its own statement, so its snapshot sees what the lock's previous holder
  -- committed): the key, its account, plan and creator, and the counters of this request's class.
  SELECT ch.id AS chave_id, ch.conta_id, ch.usuario_id, ch.escopos, ch.suspensa_ate, ch.recusas_consecutivas,
         ch.ultimo_uso_em, c.plano_id, c.bloqueada, c.api_ativa,
         CASE WHEN u.ativo THEN u.permissoes ELSE '{}'::text[] END AS permissoes,
         p.api_disponivel, p.rajada, p.rajada_recarga_por_segundo, p.simultaneas_por_chave, p.simultaneas_por_conta,
         p.chamadas_por_mes, p.leituras_por_minuto, p.escritas_por_minuto,
         (SELECT api_enabled FROM platform) AS api_enabled,
         b.tokens, b.refreshed_at, w.window_start, w.used, m.chamadas AS month_charged, ma.unspent AS month_unspent,
         r.repeticao
    INTO k
    FROM chaves_api ch
    JOIN contas c ON c.id = ch.conta_id
    JOIN planos p ON p.id = c.plano_id
    JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
    -- A repetition is charged as a read (contract §8.2): its minute counter is the reads'. A POST's
    -- Idempotency-Key is looked up inline, any other probe through the function.
    -- Found by its primary key alone (the LIMIT keeps the other conditions out): with the expiry in
    -- its WHERE, a plan made on an empty table read the expiry index, every live key of every account.
    LEFT JOIN LATERAL (SELECT i.route = p_prova ->> 'rota' AND i.expires_at > v_now + interval '1 minute' AS feita
                         FROM idempotency_keys i
                        WHERE i.conta_id = ch.conta_id AND i.chave_id = ch.id AND i.key = p_prova ->> 'chave'
                        LIMIT 1) ik ON p_prova ? 'chave'
    CROSS JOIN LATERAL (SELECT ik.feita IS TRUE
                               OR (p_prova IS NOT NULL AND NOT p_prova ? 'chave' AND admission_repeticao(ch.conta_id, p_prova))
                               AS repeticao) r
    LEFT JOIN rate_buckets b ON b.chave_id = ch.id
    LEFT JOIN minute_windows w ON w.conta_id = ch.conta_id AND w.classe = CASE WHEN r.repeticao THEN 'leitura' ELSE p_classe END
    LEFT JOIN uso_mensal m ON m.conta_id = ch.conta_id AND m.mes = v_mes
    LEFT JOIN month_advances ma ON ma.conta_id = ch.conta_id AND ma.mes = v_mes AND ma.charged = m.chamadas
   WHERE ch.token_hash = p_hash AND ch.revogada_em IS NULL AND (ch.expira_em IS NULL OR ch.expira_em > v_now);

  IF k.chave_id IS NULL THEN
    v_out := '{"outcome":"nao_autenticado"}';
  ELSE
    -- The key's state; a suspension that has run out is forgotten with its count. The last use is
    -- kept to the minute: it is for people, not rules.
    v_recusas := k.recusas_consecutivas;
    v_suspensa := k.suspensa_ate;
    v_key_update := v_suspensa <= v_now OR k.ultimo_uso_em IS NULL OR k.ultimo_uso_em < v_now - interval '1 minute';
    IF v_suspensa <= v_now THEN
      v_suspensa := NULL;
      v_recusas := 0;
    END IF;

    v_refusal := admission_refusal(k.bloqueada, k.api_ativa, k.api_disponivel, v_suspensa, p_escopo, k.escopos,
                                   p_permissao, k.permissoes, k.api_enabled);
    IF v_refusal IS NOT NULL THEN
      v_out := admission_refused_json(v_refusal, k.conta_id, k.chave_id, k.usuario_id, k.plano_id, k.permissoes, v_suspensa);
    ELSE
      -- The slots count without those this request's process gives back now.
      SELECT coalesce(sum(rs.in_flight) FILTER (WHERE rs.chave_id = k.chave_id), 0)::int, coalesce(sum(rs.in_flight), 0)::int
        INTO v_key_slots, v_account_slots
        FROM request_slots rs WHERE rs.conta_id = k.conta_id AND rs.expires_at > v_now;
      v_released := cardinality(array_positions(p_release_chaves, k.chave_id));
      v_key_slots := greatest(0, v_key_slots - v_released);
      v_account_slots := greatest(0, v_account_slots - cardinality(array_positions(p_release_contas, k.conta_id)));
      v_tokens := admission_tokens(k.tokens, k.refreshed_at, k.rajada, k.rajada_recarga_por_segundo, v_now);
      -- A window newer than this transaction's clock was opened by a transaction that started later
      -- but took the lock first: it is the current one.
      v_win := greatest(k.window_start, v_window);
      v_used := CASE WHEN k.window_start >= v_window THEN k.used ELSE 0 END;
      v_chamadas := coalesce(k.month_charged, 0);
      v_unspent := coalesce(k.month_unspent, 0);
      v_month := v_chamadas - v_unspent;
      -- A repetition costs 1 in the burst, 0 in the month, and counts as a read (contract §8.2).
      v_classe := CASE WHEN k.repeticao THEN 'leitura' ELSE p_classe END;
      v_custo := CASE WHEN k.repeticao THEN 1 ELSE least(p_custo, k.rajada) END;
      v_custo_mes := CASE WHEN k.repeticao THEN 0 ELSE coalesce(p_custo_mes, v_custo) END;
      v_minuto_q := CASE WHEN v_classe = 'escrita' THEN k.escritas_por_minuto ELSE k.leituras_por_minuto END;

      IF p_sem_vaga THEN
        v_key_slots := 0;
        v_account_slots := 0;
      END IF;
      v_limite := admission_limit(v_custo, v_custo_mes, v_key_slots, v_account_slots, v_tokens, v_used, v_month,
                                  k.simultaneas_por_chave, k.simultaneas_por_conta, v_minuto_q, k.chamadas_por_mes);
      IF v_limite IS NULL THEN
        v_taken := true;
        v_tokens := v_tokens - v_custo;
        v_used := v_used + v_custo;
        v_month := v_month + v_custo_mes;
        v_block := admission_month_block(v_custo_mes, v_chamadas, v_unspent, k.chamadas_por_mes);
        v_chamadas := v_chamadas + v_block;
        v_unspent := v_unspent + v_block - v_custo_mes;
        v_key_update := v_key_update OR v_recusas > 0;
        v_recusas := 0;
      ELSE
        v_retry := admission_retry_after(v_limite, v_custo, v_tokens, k.rajada_recarga_por_segundo, v_win, v_next_month, v_now);
        v_recusas := v_recusas + 1;
        v_key_update := true;
        v_suspended_now := admission_suspension(v_recusas, v_now);
        v_suspensa := v_suspended_now;
      END IF;
      v_out := admission_json(v_limite, v_retry, v_suspended_now, k.repeticao, k.conta_id, k.chave_id, k.usuario_id, k.plano_id,
                              k.permissoes, v_win, v_mes, v_next_month, v_now, k.rajada, k.rajada_recarga_por_segundo,
                              v_tokens, v_minuto_q, v_used, k.chamadas_por_mes, v_month);
    END IF;
  END IF;

  -- What an admitted request took. Every row is the account's, under its lock: an update, or the
  -- row's first insert. Only uso_mensal is logged, and only a new block writes it.
  IF v_taken THEN
    UPDATE rate_buckets SET tokens = v_tokens, refreshed_at = greatest(k.refreshed_at, v_now) WHERE chave_id = k.chave_id;
    IF NOT FOUND THEN
      INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at) VALUES (k.conta_id, k.chave_id, v_tokens, v_now);
    END IF;
    UPDATE minute_windows SET window_start = v_win, used = v_used WHERE conta_id = k.conta_id AND classe = v_classe;
    IF NOT FOUND THEN
      INSERT INTO minute_windows (conta_id, classe, window_start, used) VALUES (k.conta_id, v_classe, v_win, v_used);
    END IF;
    IF v_block > 0 THEN
      INSERT INTO uso_mensal (conta_id, mes, chamadas) VALUES (k.conta_id, v_mes, v_chamadas)
      ON CONFLICT (conta_id, mes) DO UPDATE SET chamadas = uso_mensal.chamadas + v_block;
    END IF;
    UPDATE month_advances SET charged = v_chamadas, unspent = v_unspent WHERE conta_id = k.conta_id AND mes = v_mes;
    IF NOT FOUND THEN
      INSERT INTO month_advances (conta_id, mes, charged, unspent) VALUES (k.conta_id, v_mes, v_chamadas, v_unspent);
    END IF;
    -- The slot, net of this key's releases; a row that had expired belonged to this process while
    -- it looked dead: it starts over.
    IF NOT p_sem_vaga THEN
      UPDATE request_slots s
         SET in_flight = greatest(0, CASE WHEN s.expires_at > v_now THEN s.in_flight ELSE 0 END + 1 - v_released),
             expires_at = greatest(s.expires_at, v_now + interval '30 seconds')
       WHERE s.holder = p_holder AND s.chave_id = k.chave_id;
      IF NOT FOUND THEN
        INSERT INTO request_slots (holder, chave_id, conta_id, in_flight, expires_at)
        VALUES (p_holder, k.chave_id, k.conta_id, 1, v_now + interval '30 seconds');
      END IF;
    END IF;
  END IF;

  -- The other slots given back (all of them when nothing was taken).
  IF cardinality(p_release_chaves) > 0 AND (NOT v_taken OR v_released < cardinality(p_release_chaves)) THEN
    UPDATE request_slots s SET in_flight = greatest(0, CASE WHEN s.expires_at > v_now THEN s.in_flight ELSE 0 END - r.n)
      FROM (SELECT u.chave_id, count(*)::int AS n FROM unnest(p_release_chaves) AS u(chave_id)
             WHERE NOT v_taken OR u.chave_id <> k.chave_id GROUP BY u.chave_id) r
     WHERE s.holder = p_holder AND s.chave_id = r.chave_id;
  END IF;

  -- Refusal counts, suspensions, the last use, and the e-mail to the creator of a key suspended now.
  IF v_key_update THEN
    UPDATE chaves_api
       SET recusas_consecutivas = v_recusas, suspensa_ate = v_suspensa,
           ultimo_uso_em = CASE WHEN v_taken THEN v_now ELSE ultimo_uso_em END
     WHERE conta_id = k.conta_id AND id = k.chave_id;
    IF v_suspended_now IS NOT NULL THEN
      PERFORM registrar_suspensao(k.conta_id, k.chave_id, v_suspended_now, v_limite, v_retry, v_recusas);
    END IF;
  END IF;

  RETURN v_out;
END $$;
