-- The API's two entry points to stock movements, both over estoque_movimentar (sql/code/estoque.sql):
-- POST /estoque/movimentos for a batch of requests (api_estoque_movimentar) and POST
-- /estoque/movimentos/lote (api_estoque_movimentar_lote).
--
-- A request's movement is one statement, batched with the others waiting (api/writes/write-queue.ts):
-- who makes the change, the Idempotency-Key's claim, the movement with its balance and event, and
-- the key's record, all in one round trip and one transaction, with no BEGIN and COMMIT around it.
-- The same steps as separate statements in a transaction were six round trips, and most of a
-- movement's time was spent between them (BENCHMARKS.md, "Stock movements and the catalog").
-- Functions on the write path are PL/pgSQL, whose statements are planned once per connection: a SQL
-- function called from another function is planned again at every call.

-- The movement as the API answers it (§2.2), by its id: the first one again, for a repetition.
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

-- POST /estoque/movimentos, for the requests of a batch (one movement each), in one round trip and
-- one commit. Each claims its Idempotency-Key (api_write_claim never waits); the claimed ones are
-- made together (estoque_movimentar), a failure failing only its own request; then every key's
-- record is kept in one statement. Answers per request, in the order given: how its key was
-- claimed, and what it is answered (a new movement's fields in movimento, a refusal in recusa and
-- limite, a repetition its first movement read again), or {"erro", "mensagem"} for a movement that
-- failed (a 500 for its request).
CREATE FUNCTION api_estoque_movimentar(
  p_contas uuid[], p_chaves uuid[],                -- who makes each movement: account and API key
  p_keys text[], p_routes text[], p_hashes bytea[], -- its Idempotency-Key (NULL: none), operation and body hash
  p_tipos text[], p_variacoes uuid[], p_skus text[], p_partes uuid[], p_quantidades int[], p_contados int[],
  p_motivos text[], p_observacoes text[], p_referencias text[], p_metadados jsonb[]
) RETURNS json
LANGUAGE plpgsql
-- Every statement it runs, down to the foreign key checks and the event's trigger, finds its rows by
-- key: an index lookup whatever the statistics said when the connection first planned it.
SET enable_seqscan = off
AS $$
DECLARE
  v_out text[] := array_fill(NULL::text, ARRAY[cardinality(p_contas)]);
  v_fazer boolean[] := array_fill(false, ARRAY[cardinality(p_contas)]);
  x record;
  c api_write_claim;
  r record;
  mv estoque_movimento;
  v_status int;
  v_codigo text;
  -- The keys' records: k_n of them.
  k_n int := 0;
  k_contas uuid[] := '{}'::uuid[]; k_chaves uuid[] := '{}'::uuid[]; k_keys text[] := '{}'::text[];
  k_routes text[] := '{}'::text[]; k_hashes bytea[] := '{}'::bytea[]; k_status int[] := '{}'::int[];
  k_resources uuid[] := '{}'::uuid[]; k_codigos text[] := '{}'::text[]; k_motivos text[] := '{}'::text[];
BEGIN
  FOR x IN
    SELECT u.i::int AS i,
           -- One key twice in a batch: the second finds the first still running (409).
           row_number() OVER (PARTITION BY u.conta_id, u.chave_id, p_keys[u.i] ORDER BY u.i) AS vez
      FROM unnest(p_contas, p_chaves) WITH ORDINALITY AS u (conta_id, chave_id, i)
  LOOP
    IF x.vez > 1 AND p_keys[x.i] IS NOT NULL THEN
      v_out[x.i] := '{"claim":"running"}';
      CONTINUE;
    END IF;
    c := api_write_claim(p_contas[x.i], p_chaves[x.i], p_keys[x.i], p_routes[x.i], p_hashes[x.i]);
    v_fazer[x.i] := c.claim = 'new';
    IF c.claim <> 'new' THEN
      v_out[x.i] := json_build_object('claim', c.claim, 'status_code', c.status_code, 'codigo', c.codigo, 'motivo', c.motivo,
                                      'movimento', CASE WHEN c.resource_id IS NOT NULL THEN api_movimento_json(p_contas[x.i], c.resource_id) END)::text;
    END IF;
  END LOOP;

  r := estoque_movimentar('api', p_contas, p_chaves, p_tipos, p_variacoes, p_skus, p_partes, p_quantidades, p_contados,
                          p_motivos, p_observacoes, p_referencias, p_metadados, p_fazer => v_fazer, p_isolar => true);

  FOR i IN 1..cardinality(p_contas) LOOP
    CONTINUE WHEN NOT v_fazer[i];
    IF r.erros[i] IS NOT NULL THEN
      v_out[i] := r.erros[i]::text;
      CONTINUE;
    END IF;
    mv := r.movimentos[i];
    -- A business refusal is kept and replayed as it was; nothing else was written.
    v_status := CASE WHEN mv.recusa IS NULL THEN 201 ELSE 422 END;
    v_codigo := CASE WHEN v_status = 422 THEN 'saldo_insuficiente' END;
    v_out[i] := json_build_object('claim', 'new', 'status_code', v_status, 'codigo', v_codigo,
                                  'motivo', mv.recusa, 'recusa', mv.recusa, 'limite', mv.limite,
                                  'movimento', CASE WHEN v_status = 201 THEN to_json(mv) END)::text;
    IF p_keys[i] IS NOT NULL THEN
      k_n := k_n + 1;
      k_contas[k_n] := p_contas[i]; k_chaves[k_n] := p_chaves[i]; k_keys[k_n] := p_keys[i];
      k_routes[k_n] := p_routes[i]; k_hashes[k_n] := p_hashes[i]; k_status[k_n] := v_status;
      k_resources[k_n] := CASE WHEN v_status = 201 THEN mv.id END; k_codigos[k_n] := v_codigo; k_motivos[k_n] := mv.recusa;
    END IF;
  END LOOP;
  IF k_n > 0 THEN
    PERFORM api_idempotency_records(k_contas, k_chaves, k_keys, k_routes, k_hashes, k_status, k_resources, k_codigos, k_motivos);
  END IF;
  RETURN ('[' || array_to_string(v_out, ',') || ']')::json;
END $$;

-- POST /estoque/movimentos/lote: up to 100 movements of one account, all or none, in the caller's
-- transaction (the pipeline's, which declared who makes the change, claims the Idempotency-Key
-- before and keeps its record after). Each item is judged as that movement alone would be, against
-- the balance the items before it in the request left; a refused item moves nothing, so the ones
-- after it are judged without it. The items run in the order of their balances (the request's order
-- within each balance), as every call of estoque_movimentar does. Answers {"lote_id", "movimentos":
-- [...]}, the movements in the order given, or, when any item was refused,
-- {"recusas": [{"indice", "recusa", "limite"}, ...]} in the order given and nothing written.
CREATE FUNCTION api_estoque_movimentar_lote(
  p_conta_id uuid,
  p_tipos text[], p_variacoes uuid[], p_skus text[], p_partes uuid[], p_quantidades int[], p_contados int[],
  p_motivos text[], p_observacoes text[], p_referencias text[], p_metadados jsonb[]
) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  v_lote uuid := gen_random_uuid();
  r record;
  v_recusas json;
BEGIN
  r := estoque_movimentar(NULL, array_fill(p_conta_id, ARRAY[cardinality(p_tipos)]), NULL, p_tipos, p_variacoes, p_skus,
                          p_partes, p_quantidades, p_contados, p_motivos, p_observacoes, p_referencias, p_metadados,
                          p_lote => v_lote);
  SELECT json_agg(json_build_object('indice', x.ordinality - 1, 'recusa', x.recusa, 'limite', x.limite) ORDER BY x.ordinality)
    INTO v_recusas
    FROM unnest(r.movimentos) WITH ORDINALITY AS x
   WHERE x.recusa IS NOT NULL;
  IF v_recusas IS NOT NULL THEN
    RETURN json_build_object('recusas', v_recusas);
  END IF;
  RETURN json_build_object('lote_id', v_lote, 'movimentos', to_json(r.movimentos));
END $$;
