-- A batch of POST /estoque/movimentos requests moved as a set (api_estoque_movimentar_lote tries it
-- first): a few statements for the whole batch instead of a claim, a check and a balance statement
-- for each movement, each a PL/pgSQL call. Each movement is answered exactly as
-- api_estoque_movimentar would answer it (test/estoque-conjunto.test.ts compares the two on random
-- batches). Measured (BENCHMARKS.md, movements): PostgreSQL's CPU per movement fell about a seventh.
--
-- It takes the batches whose movements are entradas and saídas of a variation (by id or SKU), each
-- balance once and already open: the common case. Any other batch (an ajuste, a SKU that names no
-- variation or several, a balance twice, an entrada that opens a balance) answers NULL before it
-- locks or writes anything, and goes one movement at a time (api_estoque_movimentar_lote_em).
CREATE FUNCTION api_estoque_movimentar_conjunto(
  p_contas uuid[], p_chaves uuid[], p_keys text[], p_routes text[], p_hashes bytea[],
  p_tipos text[], p_variacoes uuid[], p_skus text[], p_partes uuid[], p_quantidades int[], p_contados int[],
  p_motivos text[], p_observacoes text[], p_referencias text[], p_metadados jsonb[]
) RETURNS json
LANGUAGE plpgsql AS $$
DECLARE
  -- Per movement, in the order given:
  v_var uuid[];      -- its variation: by id, or its SKU's
  v_vez int[];       -- its place among the batch's requests with the same Idempotency-Key
  v_um_a_um boolean; -- the batch must go one by one
  v_sumiu boolean;   -- a balance to move was not found under its lock
  v_claim text[];    -- how its key was claimed: new, running, conflito or done
  v_status int[]; v_codigo text[]; v_motivo text[]; v_resource uuid[];  -- done: the key's record
  v_mov estoque_movimento[];  -- new: the movement made, or its refusal (recusa, limite)
  v_saldo uuid[];    -- new: the balance it moves
BEGIN
  SELECT array_agg(x.variacao ORDER BY x.i), array_agg(x.vez ORDER BY x.i),
         bool_or(coalesce(p_tipos[x.i] NOT IN ('entrada', 'saida'), true) OR p_quantidades[x.i] IS NULL
                 OR p_contados[x.i] IS NOT NULL OR x.variacao IS NULL OR x.abre)
           OR count(DISTINCT (x.conta_id, x.variacao, p_partes[x.i])) < count(*)
    INTO v_var, v_vez, v_um_a_um
    FROM (SELECT y.*,
                 row_number() OVER (PARTITION BY y.conta_id, y.chave_id, p_keys[y.i] ORDER BY y.i)::int AS vez,
                 -- An entrada that would open its balance. Known before any lock (a balance is never
                 -- deleted): bailing out once some balances were locked would make the loop take the
                 -- others out of order.
                 p_tipos[y.i] = 'entrada'
                   AND EXISTS (SELECT FROM variacoes v WHERE v.conta_id = y.conta_id AND v.id = y.variacao)
                   AND NOT EXISTS (SELECT FROM estoque_saldos s
                                    WHERE s.conta_id = y.conta_id AND s.variacao_id = y.variacao
                                      AND s.parte_id IS NOT DISTINCT FROM p_partes[y.i]
                                      AND s.local_id = (SELECT l.id FROM locais l WHERE l.conta_id = y.conta_id AND l.tipo = 'proprio')) AS abre
            FROM (SELECT u.i, u.conta_id, u.chave_id,
                         coalesce(p_variacoes[u.i], (estoque_variacao_do_sku(u.conta_id, p_skus[u.i])).variacao) AS variacao
                    FROM unnest(p_contas, p_chaves) WITH ORDINALITY AS u (conta_id, chave_id, i)
                  OFFSET 0) y) x;  -- OFFSET 0: each SKU looked up once
  IF v_um_a_um THEN
    RETURN NULL;
  END IF;

  -- The keys, as api_write_claim claims each: locked without waiting (held elsewhere: running; the
  -- second of one key in the batch finds the first running), then read in a statement of its own,
  -- whose snapshot sees what the lock's previous holder committed.
  SELECT array_agg(CASE WHEN p_keys[i] IS NULL THEN 'new'
                        WHEN v_vez[i] > 1 THEN 'running'
                        WHEN pg_try_advisory_xact_lock(hashtextextended(p_contas[i]::text || p_chaves[i]::text || p_keys[i], 7410204))
                          THEN 'new'
                        ELSE 'running' END ORDER BY i)
    INTO v_claim
    FROM generate_subscripts(p_contas, 1) AS i;
  SELECT array_agg(x.claim ORDER BY x.i),
         array_agg(CASE WHEN x.claim = 'done' THEN x.status_code END ORDER BY x.i),
         array_agg(CASE WHEN x.claim = 'done' THEN x.codigo END ORDER BY x.i),
         array_agg(CASE WHEN x.claim = 'done' THEN x.motivo END ORDER BY x.i),
         array_agg(CASE WHEN x.claim = 'done' THEN x.resource_id END ORDER BY x.i)
    INTO v_claim, v_status, v_codigo, v_motivo, v_resource
    FROM (SELECT i, k.status_code, k.codigo, k.motivo, k.resource_id,
                 CASE WHEN k.expires_at IS NULL THEN v_claim[i]
                      WHEN k.route IS DISTINCT FROM p_routes[i] OR k.request_hash IS DISTINCT FROM p_hashes[i] THEN 'conflito'
                      ELSE 'done' END AS claim
            FROM generate_subscripts(p_contas, 1) AS i
            -- By its primary key alone, as api_write_claim reads it; the expiry is checked after.
            LEFT JOIN LATERAL (SELECT ik.route, ik.request_hash, ik.status_code, ik.codigo, ik.motivo, ik.resource_id, ik.expires_at
                                 FROM idempotency_keys ik
                                WHERE ik.conta_id = p_contas[i] AND ik.chave_id = p_chaves[i] AND ik.key = p_keys[i]
                                LIMIT 1) k ON v_claim[i] = 'new' AND k.expires_at > now()) x;

  -- The new ones, judged as estoque_movimento_preparar judges each: the variation, part and own
  -- location exist, the quantity respects the minimum and the multiple, a saída finds its balance.
  -- Their balances are locked in the order every batch takes them (account, variation, part), and
  -- each movement's criado_em is taken once its balance is locked.
  WITH novos AS (
    SELECT i, p_contas[i] AS conta_id, v_var[i] AS variacao_id, p_partes[i] AS parte_id
      FROM generate_subscripts(p_contas, 1) AS i
     WHERE v_claim[i] = 'new'
  ), validos AS (
    SELECT n.*, v.quantidade_minima, v.multiplo, l.id AS local_id
      FROM novos n
      JOIN variacoes v ON v.conta_id = n.conta_id AND v.id = n.variacao_id
      JOIN locais l ON l.conta_id = n.conta_id AND l.tipo = 'proprio'
     WHERE n.parte_id IS NULL
        OR EXISTS (SELECT FROM partes pa WHERE pa.conta_id = n.conta_id AND pa.variacao_id = n.variacao_id AND pa.id = n.parte_id)
  ), travados AS MATERIALIZED (
    SELECT a.i, s.id, s.saldo
      FROM validos a
      JOIN estoque_saldos s ON s.conta_id = a.conta_id AND s.local_id = a.local_id AND s.variacao_id = a.variacao_id
                           AND s.parte_id IS NOT DISTINCT FROM a.parte_id
     ORDER BY a.conta_id, a.variacao_id, a.parte_id
       FOR UPDATE OF s
  ), julgados AS (
    SELECT n.i, a.local_id, t.id AS saldo_id, t.saldo,
           CASE WHEN a.i IS NULL THEN 'referencia_invalida'
                WHEN p_quantidades[n.i] < a.quantidade_minima THEN 'abaixo_do_minimo'
                WHEN p_quantidades[n.i] % a.multiplo <> 0 THEN 'fora_do_multiplo'
                WHEN p_tipos[n.i] = 'saida' AND coalesce(t.saldo, 0) < p_quantidades[n.i] THEN 'saldo_insuficiente' END AS recusa,
           CASE WHEN a.i IS NULL THEN NULL
                WHEN p_quantidades[n.i] < a.quantidade_minima THEN a.quantidade_minima
                WHEN p_quantidades[n.i] % a.multiplo <> 0 THEN a.multiplo
                WHEN p_tipos[n.i] = 'saida' AND coalesce(t.saldo, 0) < p_quantidades[n.i] THEN coalesce(t.saldo, 0) END AS limite
      FROM novos n LEFT JOIN validos a ON a.i = n.i LEFT JOIN travados t ON t.i = n.i
  )
  SELECT array_agg(CASE WHEN j.i IS NULL THEN NULL
                        WHEN j.recusa IS NOT NULL
                          THEN ROW(j.recusa, j.limite, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)::estoque_movimento
                        ELSE ROW(NULL, NULL, gen_random_uuid(), p_tipos[j.i], v_var[j.i], p_partes[j.i], j.local_id, p_quantidades[j.i],
                                 j.saldo, j.saldo + CASE WHEN p_tipos[j.i] = 'saida' THEN -p_quantidades[j.i] ELSE p_quantidades[j.i] END,
                                 p_motivos[j.i], p_observacoes[j.i], clock_timestamp(), p_referencias[j.i],
                                 coalesce(p_metadados[j.i], '{}'))::estoque_movimento END ORDER BY g.i),
         array_agg(j.saldo_id ORDER BY g.i), coalesce(bool_or(j.i IS NOT NULL AND j.recusa IS NULL AND j.saldo_id IS NULL), false)
    INTO v_mov, v_saldo, v_sumiu
    FROM generate_subscripts(p_contas, 1) AS g (i)
    LEFT JOIN julgados j ON j.i = g.i;
  -- A balance gone since the first look (none is ever deleted): the loop answers it, nothing written yet.
  IF v_sumiu THEN
    RETURN NULL;
  END IF;

  UPDATE estoque_saldos s SET saldo = (v_mov[g.i]).saldo_depois
    FROM generate_subscripts(p_contas, 1) AS g (i)
   WHERE v_claim[g.i] = 'new' AND (v_mov[g.i]).recusa IS NULL AND s.conta_id = p_contas[g.i] AND s.id = v_saldo[g.i];
  -- Written in the order of their balances, as the one-by-one way writes them (the first of a
  -- variation opens its estoque.movimentado window).
  PERFORM estoque_movimentos_gravar('api', array_agg(p_contas[i] ORDER BY p_contas[i], v_var[i], p_partes[i], i),
                                    array_agg(p_chaves[i] ORDER BY p_contas[i], v_var[i], p_partes[i], i),
                                    array_agg(v_mov[i] ORDER BY p_contas[i], v_var[i], p_partes[i], i))
     FROM generate_subscripts(p_contas, 1) AS i
    WHERE v_claim[i] = 'new' AND (v_mov[i]).recusa IS NULL
   HAVING count(*) > 0;
  -- A refusal is kept and replayed as it was (DESIGN §6), like a movement made.
  PERFORM api_idempotency_records(array_agg(p_contas[i]), array_agg(p_chaves[i]), array_agg(p_keys[i]),
                                  array_agg(p_routes[i]), array_agg(p_hashes[i]),
                                  array_agg(CASE WHEN (v_mov[i]).recusa IS NULL THEN 201 ELSE 422 END),
                                  array_agg((v_mov[i]).id),
                                  array_agg(CASE WHEN (v_mov[i]).recusa IS NOT NULL THEN 'saldo_insuficiente' END),
                                  array_agg((v_mov[i]).recusa))
     FROM generate_subscripts(p_contas, 1) AS i
    WHERE v_claim[i] = 'new' AND p_keys[i] IS NOT NULL
   HAVING count(*) > 0;

  -- The answers, in the order given, as api_estoque_movimentar_lote_em gives them.
  RETURN json_agg(CASE
           WHEN v_claim[i] = 'running' AND v_vez[i] > 1 THEN '{"claim":"running"}'::json
           WHEN v_claim[i] = 'new' AND (v_mov[i]).recusa IS NOT NULL THEN
             json_build_object('claim', 'new', 'status_code', 422, 'codigo', 'saldo_insuficiente', 'motivo', (v_mov[i]).recusa,
                               'recusa', (v_mov[i]).recusa, 'limite', (v_mov[i]).limite, 'movimento', NULL)
           WHEN v_claim[i] = 'new' THEN
             json_build_object('claim', 'new', 'status_code', 201, 'codigo', NULL, 'motivo', NULL, 'recusa', NULL, 'limite', NULL,
                               'movimento', to_json(v_mov[i]))
           ELSE json_build_object('claim', v_claim[i], 'status_code', v_status[i], 'codigo', v_codigo[i], 'motivo', v_motivo[i],
                                  'recusa', NULL, 'limite', NULL,
                                  'movimento', CASE WHEN v_resource[i] IS NOT NULL THEN api_movimento_json(p_contas[i], v_resource[i]) END)
           END ORDER BY i)
    FROM generate_subscripts(p_contas, 1) AS i;
END $$;
