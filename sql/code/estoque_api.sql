-- POST /estoque/movimentos in one statement (contract §4.2): who makes the change, the
-- Idempotency-Key's claim, the movement with its balance and event, and the key's record, all in
-- one round trip and one transaction, with no BEGIN and COMMIT around it; and the movements of a
-- batch of requests in one round trip.
--
-- The same steps as separate statements in a transaction were six round trips, and most of a
-- movement's time was spent between them (BENCHMARKS.md, "Stock movements and the catalog").
-- Functions on the write path are PL/pgSQL, whose statements are planned once per connection: a SQL
-- function called from another function is planned again at every call.

-- The movement as the API answers it (§2.2), by its id: the one just made, or the first one again
-- for a repetition.
CREATE FUNCTION api_movimento_json(p_conta_id uuid, p_id uuid) RETURNS json
LANGUAGE plpgsql STABLE AS $$
BEGIN
  RETURN (SELECT json_build_object('id', m.id, 'tipo', m.tipo, 'variacao_id', m.variacao_id, 'parte_id', m.parte_id,
                                   'local_id', m.local_id, 'quantidade', m.quantidade, 'saldo_antes', m.saldo_antes,
                                   'saldo_depois', m.saldo_depois, 'motivo', m.motivo, 'observacao', m.observacao,
                                   'criado_em', m.criado_em, 'referencia_externa', m.referencia_externa,
                                   'metadados', m.metadados)
            FROM estoque_movimentos m WHERE m.conta_id = p_conta_id AND m.id = p_id);
END $$;

-- The answer: how the key was claimed and, for a movement made or refused now, what its request
-- is answered (a new movement's fields in movimento, a refusal in recusa and limite). A repetition
-- reads its first movement again. p_gravar false: the movement is prepared (its balance moved) but
-- neither it nor the key's record is written; the caller writes them, with the batch's others, from
-- novo and the answer's status_code, codigo and motivo. OUT parameters, not a table: a caller
-- assigns the answer instead of running a query for it, which saves executor start-ups.
CREATE FUNCTION api_estoque_movimentar(
  p_conta_id uuid,
  p_chave_id uuid,
  p_key text,            -- Idempotency-Key
  p_route text,          -- the operation it was used on
  p_hash bytea,          -- SHA-256 of the canonical body
  p_tipo text,
  p_variacao_id uuid,    -- or NULL with p_sku
  p_sku text,
  p_parte_id uuid,
  p_quantidade int,
  p_contado int,
  p_motivo text,
  p_observacao text,
  p_referencia_externa text,
  p_metadados jsonb,
  p_gravar boolean DEFAULT true,
  OUT claim text, OUT status_code int, OUT codigo text, OUT motivo text, OUT recusa text, OUT limite int,
  OUT movimento json, OUT novo estoque_movimento
)
LANGUAGE plpgsql AS $$
DECLARE
  c api_write_claim;
  m estoque_movimento;
BEGIN
  c := api_write_claim(p_conta_id, p_chave_id, p_key, p_route, p_hash);
  claim := c.claim;
  IF c.claim = 'done' THEN
    status_code := c.status_code;
    codigo := c.codigo;
    motivo := c.motivo;
    IF c.resource_id IS NOT NULL THEN
      movimento := api_movimento_json(p_conta_id, c.resource_id);
    END IF;
    RETURN;
  ELSIF c.claim <> 'new' THEN
    RETURN;
  END IF;

  m := estoque_movimento_preparar(p_conta_id, p_tipo, p_variacao_id, p_parte_id, p_quantidade, p_contado, p_motivo,
                                  p_observacao, p_sku => p_sku, p_referencia_externa => p_referencia_externa,
                                  p_metadados => p_metadados);
  novo := m;
  IF m.recusa IS NOT NULL THEN
    -- A business refusal is kept and replayed as it was; nothing else was written.
    IF p_gravar AND p_key IS NOT NULL THEN
      PERFORM api_idempotency_record(p_conta_id, p_chave_id, p_key, p_route, p_hash, 422, NULL, 'saldo_insuficiente', m.recusa);
    END IF;
    status_code := 422;
    codigo := 'saldo_insuficiente';
    motivo := m.recusa;
    recusa := m.recusa;
    limite := m.limite;
    RETURN;
  END IF;
  IF p_gravar THEN
    PERFORM estoque_movimentos_gravar('api', ARRAY[p_conta_id], ARRAY[p_chave_id], ARRAY[m]);
    IF p_key IS NOT NULL THEN
      PERFORM api_idempotency_record(p_conta_id, p_chave_id, p_key, p_route, p_hash, 201, m.id, NULL, NULL);
    END IF;
  END IF;
  -- The movement as §2.2 answers it: the fields of the one just made (a repetition reads it again).
  status_code := 201;
  movimento := to_json(m);
END $$;

-- The movements of a batch of requests (api/writes/write-queue.ts), in one round trip and one commit, in
-- the order of their balances, so two batches never wait on each other in a circle. A movement that
-- fails (a 500 for its request) leaves the others as they are: the batch runs as one subtransaction
-- and, only when one of its movements failed, again with each in a subtransaction of its own:
-- a subtransaction for every movement always was a steady cost for a rare failure
-- (docs/decisions/0025-stock-movements-by-balance.md).
CREATE FUNCTION api_estoque_movimentar_lote(
  p_contas uuid[], p_chaves uuid[],                -- who makes each movement: account and API key
  p_keys text[], p_routes text[], p_hashes bytea[], -- its Idempotency-Key (NULL: none), operation and body hash
  p_tipos text[], p_variacoes uuid[], p_skus text[], p_partes uuid[], p_quantidades int[], p_contados int[],
  p_motivos text[], p_observacoes text[], p_referencias text[], p_metadados jsonb[]
) RETURNS json              -- per movement, in the order given: api_estoque_movimentar's answer, or {"erro": …}
LANGUAGE plpgsql
-- Every statement it runs, down to the foreign key checks and the event's trigger, finds its rows by
-- key: an index lookup whatever the statistics said when the connection first planned it.
SET enable_seqscan = off
AS $$
BEGIN
  BEGIN
    RETURN api_estoque_movimentar_lote_em(false, p_contas, p_chaves, p_keys, p_routes, p_hashes, p_tipos, p_variacoes,
                                          p_skus, p_partes, p_quantidades, p_contados, p_motivos, p_observacoes,
                                          p_referencias, p_metadados);
  EXCEPTION WHEN OTHERS THEN
    RETURN api_estoque_movimentar_lote_em(true, p_contas, p_chaves, p_keys, p_routes, p_hashes, p_tipos, p_variacoes,
                                          p_skus, p_partes, p_quantidades, p_contados, p_motivos, p_observacoes,
                                          p_referencias, p_metadados);
  END;
END $$;

-- One pass over a batch. Not isolated: the movements are prepared one by one, then written with
-- their keys' records in one statement each (a failure undoes the pass). Isolated (p_isolado): each
-- movement is made and written in a subtransaction of its own, its failure answered as
-- {"erro", "mensagem"}.
CREATE FUNCTION api_estoque_movimentar_lote_em(
  p_isolado boolean,
  p_contas uuid[], p_chaves uuid[], p_keys text[], p_routes text[], p_hashes bytea[],
  p_tipos text[], p_variacoes uuid[], p_skus text[], p_partes uuid[], p_quantidades int[], p_contados int[],
  p_motivos text[], p_observacoes text[], p_referencias text[], p_metadados jsonb[]
) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_out text[] := array_fill(NULL::text, ARRAY[cardinality(p_contas)]);
  m record;
  r record;
  -- What the pass that is not isolated writes after its loop: w_n movements, k_n keys' records.
  w_n int := 0;
  w_contas uuid[] := '{}'::uuid[];
  w_chaves uuid[] := '{}'::uuid[];
  w_movimentos estoque_movimento[] := '{}'::estoque_movimento[];
  k_n int := 0;
  k_contas uuid[] := '{}'::uuid[]; k_chaves uuid[] := '{}'::uuid[]; k_keys text[] := '{}'::text[];
  k_routes text[] := '{}'::text[]; k_hashes bytea[] := '{}'::bytea[]; k_status int[] := '{}'::int[];
  k_resources uuid[] := '{}'::uuid[]; k_codigos text[] := '{}'::text[]; k_motivos text[] := '{}'::text[];
BEGIN
  FOR m IN
    SELECT x.i::int AS i,
           -- One key twice in a batch: the second finds the first still running (409).
           row_number() OVER (PARTITION BY x.conta_id, x.chave_id, p_keys[x.i] ORDER BY x.i) AS vez,
           -- A movement by SKU goes where its variation's balance does, and moves it by the variation
           -- found here (only those pay for the lookup, once); a SKU that names none goes on to
           -- estoque_movimento_preparar, which says why.
           coalesce(p_variacoes[x.i], (estoque_variacao_do_sku(x.conta_id, p_skus[x.i])).variacao) AS variacao
      FROM unnest(p_contas, p_chaves) WITH ORDINALITY AS x(conta_id, chave_id, i)
     ORDER BY x.conta_id, variacao, p_partes[x.i], x.i
  LOOP
    IF m.vez > 1 AND p_keys[m.i] IS NOT NULL THEN
      v_out[m.i] := '{"claim":"running"}';
      CONTINUE;
    END IF;
    -- The same call in both branches: the isolated one pays for a subtransaction, and writes as it goes.
    IF p_isolado THEN
      BEGIN
        r := api_estoque_movimentar(p_contas[m.i], p_chaves[m.i], p_keys[m.i], p_routes[m.i], p_hashes[m.i],
          p_tipos[m.i], m.variacao, CASE WHEN m.variacao IS NULL THEN p_skus[m.i] END, p_partes[m.i], p_quantidades[m.i], p_contados[m.i], p_motivos[m.i],
          p_observacoes[m.i], p_referencias[m.i], p_metadados[m.i]);
      EXCEPTION WHEN OTHERS THEN
        v_out[m.i] := json_build_object('erro', SQLSTATE, 'mensagem', SQLERRM)::text;
        CONTINUE;
      END;
    ELSE
      r := api_estoque_movimentar(p_contas[m.i], p_chaves[m.i], p_keys[m.i], p_routes[m.i], p_hashes[m.i],
        p_tipos[m.i], m.variacao, CASE WHEN m.variacao IS NULL THEN p_skus[m.i] END, p_partes[m.i], p_quantidades[m.i], p_contados[m.i], p_motivos[m.i],
        p_observacoes[m.i], p_referencias[m.i], p_metadados[m.i], p_gravar => false);
      IF r.claim = 'new' THEN
        IF r.status_code = 201 THEN
          w_n := w_n + 1;
          w_contas[w_n] := p_contas[m.i]; w_chaves[w_n] := p_chaves[m.i]; w_movimentos[w_n] := r.novo;
        END IF;
        IF p_keys[m.i] IS NOT NULL THEN
          k_n := k_n + 1;
          k_contas[k_n] := p_contas[m.i]; k_chaves[k_n] := p_chaves[m.i]; k_keys[k_n] := p_keys[m.i];
          k_routes[k_n] := p_routes[m.i]; k_hashes[k_n] := p_hashes[m.i]; k_status[k_n] := r.status_code;
          k_resources[k_n] := CASE WHEN r.status_code = 201 THEN (r.novo).id END; k_codigos[k_n] := r.codigo; k_motivos[k_n] := r.motivo;
        END IF;
      END IF;
    END IF;
    v_out[m.i] := json_build_object('claim', r.claim, 'status_code', r.status_code, 'codigo', r.codigo, 'motivo', r.motivo,
                                    'recusa', r.recusa, 'limite', r.limite, 'movimento', r.movimento)::text;
  END LOOP;
  IF w_n > 0 THEN
    PERFORM estoque_movimentos_gravar('api', w_contas, w_chaves, w_movimentos);
  END IF;
  IF k_n > 0 THEN
    PERFORM api_idempotency_records(k_contas, k_chaves, k_keys, k_routes, k_hashes, k_status, k_resources, k_codigos, k_motivos);
  END IF;
  RETURN ('[' || array_to_string(v_out, ',') || ']')::json;
END $$;

-- POST /estoque/movimentos/lote: up to 100 movements of one account, all or none, in the caller's
-- transaction (the pipeline's, which claims the Idempotency-Key before and keeps its record after).
-- Each item is judged as that movement alone would be, against the balance the items before it in
-- the request left; a refused item moves nothing, so the ones after it are judged without it. The
-- items run in the order of their balances (the request's order within each balance), like the
-- batches of api_estoque_movimentar_lote, so concurrent writers never wait on each other in a
-- circle. Answers {"lote_id", "movimentos": [...]}, the movements in the order given, or, when any
-- item was refused, {"recusas": [{"indice", "recusa", "limite"}, ...]} in the order given and
-- nothing written: the block's subtransaction is rolled back, its variables are not.
CREATE FUNCTION api_estoque_movimentar_varios(p_conta_id uuid, p_itens jsonb) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_lote uuid := gen_random_uuid();
  v_feitos json[] := array_fill(NULL::json, ARRAY[jsonb_array_length(p_itens)]);
  v_recusas jsonb[] := array_fill(NULL::jsonb, ARRAY[jsonb_array_length(p_itens)]);
  v_recusado boolean := false;
  it record;
  m estoque_movimento;
  -- The movements prepared, written together once none was refused, and their places in the batch.
  n int := 0;
  v_movimentos estoque_movimento[] := '{}'::estoque_movimento[];
  v_posicoes int[] := '{}'::int[];
  -- Who made them, as the transaction declared it.
  v_origem jsonb := origem_da_mudanca();
BEGIN
  BEGIN
    FOR it IN
      -- An item by SKU is moved by the variation found here (looked up once), as in the batches.
      SELECT (x.n - 1)::int AS indice, x.item ->> 'tipo' AS tipo,
             coalesce((x.item ->> 'variacao_id')::uuid, (estoque_variacao_do_sku(p_conta_id, x.item ->> 'sku')).variacao) AS variacao_id,
             x.item ->> 'sku' AS sku, (x.item ->> 'parte_id')::uuid AS parte_id, (x.item ->> 'quantidade')::int AS quantidade,
             (x.item ->> 'contado')::int AS contado, x.item ->> 'motivo' AS motivo, x.item ->> 'observacao' AS observacao,
             x.item ->> 'referencia_externa' AS referencia_externa, x.item -> 'metadados' AS metadados
        FROM jsonb_array_elements(p_itens) WITH ORDINALITY AS x (item, n)
       ORDER BY variacao_id, (x.item ->> 'parte_id')::uuid, x.n
    LOOP
      m := estoque_movimento_preparar(p_conta_id, it.tipo, it.variacao_id, it.parte_id, it.quantidade, it.contado, it.motivo,
                                      it.observacao, p_sku => CASE WHEN it.variacao_id IS NULL THEN it.sku END,
                                      p_referencia_externa => it.referencia_externa, p_metadados => it.metadados);
      IF m.recusa IS NULL THEN
        v_feitos[it.indice + 1] := to_json(m);
        n := n + 1;
        v_movimentos[n] := m;
        v_posicoes[n] := it.indice;
      ELSE
        v_recusas[it.indice + 1] := jsonb_build_object('indice', it.indice, 'recusa', m.recusa, 'limite', m.limite);
        v_recusado := true;
      END IF;
    END LOOP;
    IF v_recusado THEN
      RAISE EXCEPTION 'a batch of movements with refused items writes nothing' USING ERRCODE = 'PF422';
    END IF;
    PERFORM estoque_movimentos_gravar(v_origem ->> 'via', array_fill(p_conta_id, ARRAY[n]),
                                      array_fill((v_origem ->> 'chave_id')::uuid, ARRAY[n]),
                                      v_movimentos, array_fill(v_lote, ARRAY[n]), v_posicoes);
  EXCEPTION WHEN SQLSTATE 'PF422' THEN
    RETURN json_build_object('recusas', to_json(array_remove(v_recusas, NULL)));
  END;
  RETURN json_build_object('lote_id', v_lote, 'movimentos', to_json(v_feitos));
END $$;
