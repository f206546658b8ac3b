-- A request admitted alone (DESIGN §3.3: admission adds under 1 ms on a quiet machine).
--
-- A quiet web process sends each request as a batch of one. Measured (BENCHMARKS.md), the batch
-- form spent about 0.3 ms of PostgreSQL's time on one request, most of it starting its big
-- statements (unnest, a dozen lateral lookups, a sort, five upserts in one statement) and keeping
-- its per-account and per-key arrays; the same decision in small statements on scalars takes about
-- a quarter of that. So api_admit_batch sends a batch of one here and a larger batch to
-- api_admit_many, the batch form unchanged. The two give the same decision and the same answer:
-- test/limits-paths.test.ts drives every ceiling through both.

ALTER FUNCTION api_admit_batch(bytea[], text[], text[], int[], text[], text, uuid[], uuid[]) RENAME TO api_admit_many;

CREATE FUNCTION api_admit_one(
  p_hash bytea,             -- SHA-256 of the presented token
  p_escopo text,            -- the scope the route needs (NULL: none)
  p_permissao text,         -- the permission the key's creator must hold (NULL: none)
  p_custo int,              -- cost units of §8.2
  p_classe text,            -- leitura | escrita: the per-minute counter charged
  p_holder text,            -- the process serving the request
  p_release_contas uuid[],  -- requests this process finished since its last batch (account and
  p_release_chaves uuid[]   -- key of each), whose slots are given back here
) RETURNS text              -- the admission, a json object (see api_admit_many)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
DECLARE
  v_now timestamptz := now();
  v_window timestamptz := date_trunc('minute', now());
  v_mes date := date_trunc('month', now() AT TIME ZONE 'UTC')::date;
  v_next_month timestamptz := (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '1 month') AT TIME ZONE 'UTC';
  v_conta uuid;
  k record;
  v_out text;
  v_reason text; v_outcome text := 'limite_excedido'; v_retry int; v_custo int; v_minuto_q int;
  v_tokens double precision; v_win timestamptz; v_used int;
  v_chamadas int; v_unspent int; v_month int; v_block int := 0;
  v_key_slots int; v_account_slots int; v_released int := 0;
  v_recusas int; v_suspensa timestamptz; v_suspended_now timestamptz; v_key_update boolean;
  v_taken boolean := false;
BEGIN
  -- The same lock as every writer of these counters: the key's account, with the accounts whose
  -- slots are given back, in one order (a revoked key's account too: it costs nothing).
  SELECT ch.conta_id INTO v_conta FROM chaves_api ch WHERE ch.token_hash = p_hash;
  IF v_conta IS NOT NULL AND (cardinality(p_release_contas) = 0 OR p_release_contas <@ ARRAY[v_conta]) THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(v_conta::text, 7410203));
  ELSIF v_conta IS NOT NULL OR cardinality(p_release_contas) > 0 THEN
    PERFORM pg_advisory_xact_lock(hashtextextended(l.conta_id::text, 7410203))
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
         b.tokens, b.refreshed_at, w.window_start, w.used, m.chamadas AS month_charged, ma.unspent AS month_unspent
    INTO k
    FROM chaves_api ch
    JOIN contas c ON c.id = ch.conta_id
    JOIN planos p ON p.id = c.plano_id
    JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
    LEFT JOIN rate_buckets b ON b.chave_id = ch.id
    LEFT JOIN minute_windows w ON w.conta_id = ch.conta_id AND w.classe = p_classe
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

    v_reason := CASE WHEN k.bloqueada THEN 'conta_bloqueada'
                     WHEN NOT k.api_ativa OR NOT k.api_disponivel THEN 'modulo_desligado'
                     WHEN v_suspensa IS NOT NULL THEN 'chave_suspensa'
                     WHEN p_escopo IS NOT NULL AND NOT (p_escopo = ANY (k.escopos)) THEN 'escopo'
                     WHEN p_permissao IS NOT NULL AND NOT (p_permissao = ANY (k.permissoes)) THEN 'permissao'
                     WHEN NOT k.api_enabled THEN 'api_desligada' END;
    IF v_reason IS NOT NULL THEN
      v_out := json_build_object(
        'outcome', CASE WHEN v_reason = 'api_desligada' THEN 'indisponivel' ELSE 'escopo_insuficiente' END,
        'reason', v_reason, 'conta_id', k.conta_id, 'chave_id', k.chave_id, 'usuario_id', k.usuario_id,
        'plano_id', k.plano_id, 'permissoes', k.permissoes,
        'retry_after', CASE WHEN v_reason = 'api_desligada' THEN 60 END,
        'suspended_until', CASE WHEN v_reason = 'chave_suspensa' THEN v_suspensa END)::text;
    ELSE
      -- Every ceiling of the plan for this request's cost; the slots without those this request's
      -- process gives back now.
      SELECT coalesce(sum(rs.in_flight) FILTER (WHERE rs.chave_id = k.chave_id), 0)::int, coalesce(sum(rs.in_flight), 0)::int
        INTO v_key_slots, v_account_slots
        FROM request_slots rs WHERE rs.conta_id = k.conta_id AND rs.expires_at > v_now;
      v_released := cardinality(array_positions(p_release_chaves, k.chave_id));
      v_key_slots := greatest(0, v_key_slots - v_released);
      v_account_slots := greatest(0, v_account_slots - cardinality(array_positions(p_release_contas, k.conta_id)));
      v_tokens := CASE WHEN k.tokens IS NULL THEN k.rajada
                       ELSE least(k.rajada::double precision,
                                  k.tokens + greatest(0, extract(epoch FROM v_now - k.refreshed_at)) * k.rajada_recarga_por_segundo) END;
      -- A window newer than this transaction's clock was opened by a transaction that started
      -- later but took the lock first: it is the current one.
      v_win := greatest(k.window_start, v_window);
      v_used := CASE WHEN k.window_start >= v_window THEN k.used ELSE 0 END;
      v_chamadas := coalesce(k.month_charged, 0);
      v_unspent := coalesce(k.month_unspent, 0);
      v_month := v_chamadas - v_unspent;
      v_custo := least(p_custo, k.rajada);
      v_minuto_q := CASE WHEN p_classe = 'escrita' THEN k.escritas_por_minuto ELSE k.leituras_por_minuto END;

      IF v_key_slots >= k.simultaneas_por_chave OR v_account_slots >= k.simultaneas_por_conta THEN
        v_reason := 'simultaneas';
        v_retry := 1;
      ELSIF v_tokens < v_custo THEN
        v_reason := 'rajada';
        v_retry := ceil((v_custo - v_tokens) / k.rajada_recarga_por_segundo);
      ELSIF v_used + v_custo > v_minuto_q THEN
        v_reason := 'minuto';
        v_retry := ceil(extract(epoch FROM v_win + interval '1 minute' - v_now));
      ELSIF v_month + v_custo > k.chamadas_por_mes THEN
        v_reason := 'mes';
        v_retry := ceil(extract(epoch FROM v_next_month - v_now));
      ELSE
        v_outcome := 'ok';
        v_taken := true;
        v_tokens := v_tokens - v_custo;
        v_used := v_used + v_custo;
        v_month := v_month + v_custo;
        IF v_unspent < v_custo THEN
          v_block := least(k.chamadas_por_mes - v_chamadas, greatest(v_custo - v_unspent, k.chamadas_por_mes / 1000));
          v_chamadas := v_chamadas + v_block;
          v_unspent := v_unspent + v_block;
        END IF;
        v_unspent := v_unspent - v_custo;
        v_key_update := v_key_update OR v_recusas > 0;
        v_recusas := 0;
      END IF;
      IF NOT v_taken THEN
        -- A refusal for limits counts towards suspension (contract §5.5); twenty in a row suspend.
        v_recusas := v_recusas + 1;
        v_key_update := true;
        IF v_recusas >= 20 THEN
          v_suspensa := v_now + interval '15 minutes';
          v_suspended_now := v_suspensa;
        END IF;
      END IF;

      -- Headers (contract §8.3): every ceiling with what is left of it after this request.
      v_out := json_build_object(
        'outcome', v_outcome, 'reason', v_reason, 'conta_id', k.conta_id, 'chave_id', k.chave_id,
        'usuario_id', k.usuario_id, 'plano_id', k.plano_id, 'permissoes', k.permissoes,
        'slot_held', v_taken, 'retry_after', v_retry, 'suspended_until', v_suspended_now,
        'window_start', CASE WHEN v_taken THEN v_win END, 'mes', CASE WHEN v_taken THEN v_mes END,
        'rajada_q', k.rajada, 'rajada_w', ceil(k.rajada::numeric / k.rajada_recarga_por_segundo)::int,
        'rajada_r', floor(v_tokens)::int, 'rajada_t', ceil((k.rajada - v_tokens) / k.rajada_recarga_por_segundo)::int,
        'minuto_q', v_minuto_q, 'minuto_r', greatest(0, v_minuto_q - v_used),
        'minuto_t', ceil(extract(epoch FROM v_win + interval '1 minute' - v_now))::int,
        'mes_q', k.chamadas_por_mes, 'mes_r', greatest(0, k.chamadas_por_mes - v_month),
        'mes_t', ceil(extract(epoch FROM v_next_month - v_now))::int)::text;
    END IF;
  END IF;

  -- What an admitted request took. Every row is the account's, under its lock: an update, or the
  -- row's first insert. Only uso_mensal is logged, and only a new block writes it.
  IF v_taken THEN
    UPDATE rate_buckets SET tokens = v_tokens, refreshed_at = greatest(k.refreshed_at, v_now) WHERE chave_id = k.chave_id;
    IF NOT FOUND THEN
      INSERT INTO rate_buckets (conta_id, chave_id, tokens, refreshed_at) VALUES (k.conta_id, k.chave_id, v_tokens, v_now);
    END IF;
    UPDATE minute_windows SET window_start = v_win, used = v_used WHERE conta_id = k.conta_id AND classe = p_classe;
    IF NOT FOUND THEN
      INSERT INTO minute_windows (conta_id, classe, window_start, used) VALUES (k.conta_id, p_classe, v_win, v_used);
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
    UPDATE request_slots s
       SET in_flight = greatest(0, CASE WHEN s.expires_at > v_now THEN s.in_flight ELSE 0 END + 1 - v_released),
           expires_at = greatest(s.expires_at, v_now + interval '30 seconds')
     WHERE s.holder = p_holder AND s.chave_id = k.chave_id;
    IF NOT FOUND THEN
      INSERT INTO request_slots (holder, chave_id, conta_id, in_flight, expires_at)
      VALUES (p_holder, k.chave_id, k.conta_id, 1, v_now + interval '30 seconds');
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
      INSERT INTO outgoing_emails (conta_id, kind, to_address, subject, body)
      SELECT ch.conta_id, 'chave_suspensa', u.email,
             'Chave de API ' || ch.prefixo || ' suspensa por 15 minutos',
             'A chave de API "' || ch.nome || '" (prefixo ' || ch.prefixo || ') recebeu 20 recusas seguidas por limite de uso'
             || ' e ficará suspensa até ' || to_char(v_suspended_now AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') || ' UTC.'
             || E'\n\nRespeite o cabeçalho Retry-After das respostas 429 para evitar novas suspensões.'
        FROM chaves_api ch JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
       WHERE ch.conta_id = k.conta_id AND ch.id = k.chave_id;
    END IF;
  END IF;

  RETURN v_out;
END $$;

-- What a web process calls: a batch of one takes the path above, a larger one the batch form. The
-- answer is the json array as text: the web process parses it, so the database need not (measured:
-- casting the single path's text to json and back cost about 15 µs of a 260 µs admission).
CREATE FUNCTION api_admit_batch(
  p_hashes bytea[], p_escopos text[], p_permissoes text[], p_custos int[], p_classes text[], p_holder text,
  p_release_contas uuid[], p_release_chaves uuid[]
) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
  IF cardinality(p_hashes) = 1 THEN
    RETURN '[' || api_admit_one(p_hashes[1], p_escopos[1], p_permissoes[1], p_custos[1], p_classes[1], p_holder,
                                p_release_contas, p_release_chaves) || ']';
  END IF;
  RETURN api_admit_many(p_hashes, p_escopos, p_permissoes, p_custos, p_classes, p_holder, p_release_contas, p_release_chaves)::text;
END $$;

-- One request alone, as an admission row (operators, tests): the batch's text read as json here.
CREATE OR REPLACE FUNCTION api_admit(
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
    api_admit_batch(ARRAY[p_token_hash], ARRAY[p_escopo], ARRAY[p_permissao], ARRAY[p_custo], ARRAY[p_classe], p_holder,
                    ARRAY(SELECT ch.conta_id FROM unnest(p_release) AS u(id) JOIN chaves_api ch ON ch.id = u.id),
                    ARRAY(SELECT u.id FROM unnest(p_release) AS u(id) JOIN chaves_api ch ON ch.id = u.id))::json -> 0)
$$;
