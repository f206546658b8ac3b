-- POST /estoque/movimentos in one statement (contract §4.2): who makes the change, the
-- Idempotency-Key's claim, the movement with its balance and event, and the key's record, all in
-- one round trip and one transaction, with no BEGIN and COMMIT around it.
--
-- Measured (BENCHMARKS.md): the same steps as separate statements in a transaction were six round
-- trips and most of a movement's time was spent between them.

-- How a write claimed its Idempotency-Key (route and body hash compared here, so the hash never
-- travels back): new, running (409), conflito (422) or done (replay the record).
CREATE TYPE api_write_claim AS (
  claim text,
  status_code int,
  resource_id uuid,
  codigo text,
  motivo text
);

-- Every POST claims its key with api_write_claim now; the earlier form (0007) is gone.
DROP FUNCTION api_write_begin(uuid, uuid, text);

CREATE FUNCTION api_write_claim(p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea)
RETURNS api_write_claim
LANGUAGE plpgsql
-- The record's lookup is by its primary key: an index lookup whatever the statistics say. A plan is
-- made once per connection; made while the table was empty it was a sequential scan, kept while the
-- table grew until the next ANALYZE (measured: 90 million rows read in a 15 s benchmark).
SET enable_seqscan = off
AS $$
DECLARE
  c api_write_claim;
  k record;
BEGIN
  -- Who makes the change, for the triggers.
  PERFORM set_config('app.via', 'api', true), set_config('app.chave_id', p_chave_id::text, true);
  c.claim := 'new';
  IF p_key IS NULL THEN
    RETURN c;
  END IF;
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_conta_id::text || p_chave_id::text || p_key, 7410204)) THEN
    c.claim := 'running';
    RETURN c;
  END IF;
  -- A statement of its own: its snapshot is taken after the lock, so it sees what the previous
  -- holder committed.
  SELECT i.route, i.request_hash, i.status_code, i.resource_id, i.codigo, i.motivo INTO k
    FROM idempotency_keys i
   WHERE i.conta_id = p_conta_id AND i.chave_id = p_chave_id AND i.key = p_key AND i.expires_at > now();
  IF FOUND THEN
    IF k.route IS DISTINCT FROM p_route OR k.request_hash IS DISTINCT FROM p_hash THEN
      c.claim := 'conflito';
    ELSE
      c.claim := 'done';
      c.status_code := k.status_code;
      c.resource_id := k.resource_id;
      c.codigo := k.codigo;
      c.motivo := k.motivo;
    END IF;
  END IF;
  RETURN c;
END $$;

-- Functions on the write path are PL/pgSQL, whose statements are planned once per connection: a SQL
-- function called from another function is planned again at every call (measured: an insert of
-- 30 µs cost 130 µs that way).

-- Keeps how a request with an Idempotency-Key ended; an expired record of the key is replaced.
CREATE OR REPLACE FUNCTION api_idempotency_record(
  p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea, p_status int, p_resource_id uuid,
  p_codigo text, p_motivo text
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO idempotency_keys AS k (conta_id, chave_id, key, route, request_hash, status_code, resource_id, codigo, motivo)
  VALUES (p_conta_id, p_chave_id, p_key, p_route, p_hash, p_status, p_resource_id, p_codigo, p_motivo)
  ON CONFLICT (conta_id, chave_id, key) DO UPDATE
     SET route = excluded.route, request_hash = excluded.request_hash, status_code = excluded.status_code,
         resource_id = excluded.resource_id, codigo = excluded.codigo, motivo = excluded.motivo,
         created_at = now(), expires_at = now() + interval '24 hours'
   WHERE k.expires_at <= now();
END $$;

-- The movement as the API answers it (§2.2), by its id: the one just made, or the first one again
-- for a repetition.
CREATE FUNCTION api_movimento_json(p_conta_id uuid, p_id uuid) RETURNS json
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT json_build_object('id', m.id, 'tipo', m.tipo, 'variacao_id', m.variacao_id, 'parte_id', m.parte_id,
                                   'local_id', m.local_id, 'quantidade', m.quantidade, 'saldo_antes', m.saldo_antes,
                                   'saldo_depois', m.saldo_depois, 'motivo', m.motivo, 'observacao', m.observacao,
                                   'criado_em', m.criado_em)
            FROM estoque_movimentos m WHERE m.conta_id = p_conta_id AND m.id = p_id);
END $$;

CREATE FUNCTION api_estoque_movimentar(
  p_conta_id uuid,
  p_chave_id uuid,
  p_key text,            -- Idempotency-Key
  p_route text,          -- the operation it was used on
  p_hash bytea,          -- SHA-256 of the canonical body
  p_tipo text,
  p_variacao_id uuid,
  p_parte_id uuid,
  p_quantidade int,
  p_contado int,
  p_motivo text,
  p_observacao text
) RETURNS TABLE (claim text, status_code int, codigo text, motivo text, recusa text, limite int, movimento json)
LANGUAGE plpgsql AS $$
DECLARE
  c api_write_claim;
  m estoque_movimento;
BEGIN
  c := api_write_claim(p_conta_id, p_chave_id, p_key, p_route, p_hash);
  IF c.claim = 'done' THEN
    RETURN QUERY SELECT c.claim, c.status_code, c.codigo, c.motivo, NULL::text, NULL::int,
                        CASE WHEN c.resource_id IS NOT NULL THEN api_movimento_json(p_conta_id, c.resource_id) END;
    RETURN;
  ELSIF c.claim <> 'new' THEN
    RETURN QUERY SELECT c.claim, NULL::int, NULL::text, NULL::text, NULL::text, NULL::int, NULL::json;
    RETURN;
  END IF;

  m := estoque_movimentar(p_conta_id, p_tipo, p_variacao_id, p_parte_id, p_quantidade, p_contado, p_motivo, p_observacao);
  IF m.recusa IS NOT NULL THEN
    -- A business refusal is kept and replayed as it was (DESIGN §6); nothing else was written.
    IF p_key IS NOT NULL THEN
      PERFORM api_idempotency_record(p_conta_id, p_chave_id, p_key, p_route, p_hash, 422, NULL, 'saldo_insuficiente', m.recusa);
    END IF;
    RETURN QUERY SELECT 'new'::text, 422, 'saldo_insuficiente'::text, m.recusa, m.recusa, m.limite, NULL::json;
    RETURN;
  END IF;
  IF p_key IS NOT NULL THEN
    PERFORM api_idempotency_record(p_conta_id, p_chave_id, p_key, p_route, p_hash, 201, m.id, NULL, NULL);
  END IF;
  -- The movement as §2.2 answers it: the fields of the one just made (a repetition reads it again).
  RETURN QUERY SELECT 'new'::text, 201, NULL::text, NULL::text, NULL::text, NULL::int, to_json(m);
END $$;

-- The movements of a batch of requests (api/write-queue.ts), in one round trip and one commit, in
-- the order of their balances, so two batches never wait on each other in a circle. A movement that
-- fails (a 500 for its request) leaves the others as they are: the batch runs as one subtransaction
-- and, only when one of its movements failed, again with each in a subtransaction of its own.
-- Measured (pgbench, batches of 16): about 6 % more movements per second than a subtransaction each.
CREATE FUNCTION api_estoque_movimentar_lote(
  p_contas uuid[], p_chaves uuid[],                -- who makes each movement: account and API key
  p_keys text[], p_routes text[], p_hashes bytea[], -- its Idempotency-Key (NULL: none), operation and body hash
  p_tipos text[], p_variacoes uuid[], p_partes uuid[], p_quantidades int[], p_contados int[], p_motivos text[],
  p_observacoes text[]
) RETURNS json              -- per movement, in the order given: api_estoque_movimentar's answer, or {"erro": …}
LANGUAGE plpgsql
-- Every statement it runs, down to the foreign key checks and the event's trigger, finds its rows by
-- key: an index lookup whatever the statistics said when the connection first planned it.
SET enable_seqscan = off
AS $$
BEGIN
  BEGIN
    RETURN api_estoque_movimentar_lote_em(false, p_contas, p_chaves, p_keys, p_routes, p_hashes, p_tipos,
                                          p_variacoes, p_partes, p_quantidades, p_contados, p_motivos, p_observacoes);
  EXCEPTION WHEN OTHERS THEN
    RETURN api_estoque_movimentar_lote_em(true, p_contas, p_chaves, p_keys, p_routes, p_hashes, p_tipos,
                                          p_variacoes, p_partes, p_quantidades, p_contados, p_motivos, p_observacoes);
  END;
END $$;

-- One pass over a batch; p_isolado: each movement in a subtransaction of its own, its failure
-- answered as {"erro", "mensagem"} (otherwise a failure undoes the pass).
CREATE FUNCTION api_estoque_movimentar_lote_em(
  p_isolado boolean,
  p_contas uuid[], p_chaves uuid[], p_keys text[], p_routes text[], p_hashes bytea[],
  p_tipos text[], p_variacoes uuid[], p_partes uuid[], p_quantidades int[], p_contados int[], p_motivos text[],
  p_observacoes text[]
) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_out text[] := array_fill(NULL::text, ARRAY[cardinality(p_contas)]);
  m record;
  r record;
BEGIN
  FOR m IN
    SELECT x.i::int AS i,
           -- One key twice in a batch: the second finds the first still running (409).
           row_number() OVER (PARTITION BY x.conta_id, x.chave_id, p_keys[x.i] ORDER BY x.i) AS vez
      FROM unnest(p_contas, p_chaves) WITH ORDINALITY AS x(conta_id, chave_id, i)
     ORDER BY x.conta_id, p_variacoes[x.i], p_partes[x.i], x.i
  LOOP
    IF m.vez > 1 AND p_keys[m.i] IS NOT NULL THEN
      v_out[m.i] := '{"claim":"running"}';
      CONTINUE;
    END IF;
    -- The same call in both branches: only the isolated one pays for a subtransaction.
    IF p_isolado THEN
      BEGIN
        SELECT * INTO r FROM api_estoque_movimentar(p_contas[m.i], p_chaves[m.i], p_keys[m.i], p_routes[m.i], p_hashes[m.i],
          p_tipos[m.i], p_variacoes[m.i], p_partes[m.i], p_quantidades[m.i], p_contados[m.i], p_motivos[m.i], p_observacoes[m.i]);
      EXCEPTION WHEN OTHERS THEN
        v_out[m.i] := json_build_object('erro', SQLSTATE, 'mensagem', SQLERRM)::text;
        CONTINUE;
      END;
    ELSE
      SELECT * INTO r FROM api_estoque_movimentar(p_contas[m.i], p_chaves[m.i], p_keys[m.i], p_routes[m.i], p_hashes[m.i],
        p_tipos[m.i], p_variacoes[m.i], p_partes[m.i], p_quantidades[m.i], p_contados[m.i], p_motivos[m.i], p_observacoes[m.i]);
    END IF;
    v_out[m.i] := row_to_json(r)::text;
  END LOOP;
  RETURN '[' || array_to_string(v_out, ',') || ']';
END $$;

-- Grouped events (estoque.movimentado, produto.atualizado) mostly join a pending event: try that
-- first, and insert only when there is none (the insert's conflict clause still settles a race).
CREATE OR REPLACE FUNCTION emit_event(p_conta_id uuid, p_tipo text, p_dados jsonb, p_endpoint_id uuid DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
  v_grupo text := agrupamento_do_evento(p_tipo, p_dados);
  v_id uuid;
BEGIN
  IF v_grupo IS NULL THEN
    INSERT INTO outbox (conta_id, tipo, dados, endpoint_id)
    VALUES (p_conta_id, p_tipo, p_dados, p_endpoint_id)
    RETURNING id INTO v_id;
    -- Delivered at commit: wakes the worker's relay at once instead of at its next poll.
    PERFORM pg_notify('outbox', '');
    RETURN v_id;
  END IF;
  -- criado_em follows the latest data the event carries.
  UPDATE outbox SET dados = p_dados, criado_em = now()
   WHERE conta_id = p_conta_id AND group_key = v_grupo AND relayed_at IS NULL
  RETURNING id INTO v_id;
  IF FOUND THEN
    RETURN v_id;
  END IF;
  INSERT INTO outbox (conta_id, tipo, dados, group_key, available_at)
  VALUES (p_conta_id, p_tipo, p_dados, v_grupo, now() + interval '60 seconds')
  ON CONFLICT (conta_id, group_key) WHERE relayed_at IS NULL AND group_key IS NOT NULL
  DO UPDATE SET dados = excluded.dados, criado_em = excluded.criado_em
  RETURNING id INTO v_id;
  RETURN v_id;
END $$;
