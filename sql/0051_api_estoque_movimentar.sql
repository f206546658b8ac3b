-- POST /estoque/movimentos in one statement (contract §4.2): who makes the change, the
-- Idempotency-Key's claim, the movement with its balance and event, and the key's record, all in
-- one round trip and one transaction, with no BEGIN and COMMIT around it.
--
-- Measured (BENCHMARKS.md): the same steps as separate statements in a transaction were six round
-- trips and most of a movement's time was spent between them.

-- How a one-statement write claimed its Idempotency-Key (api_write_begin's outcome, compared here so
-- the hash never travels back): new, running (409), conflito (422) or done (replay the record).
CREATE TYPE api_write_claim AS (
  claim text,
  status_code int,
  resource_id uuid,
  codigo text,
  motivo text
);

CREATE FUNCTION api_write_claim(p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea)
RETURNS api_write_claim
LANGUAGE plpgsql AS $$
DECLARE
  b record;
  c api_write_claim;
BEGIN
  SELECT * INTO b FROM api_write_begin(p_conta_id, p_chave_id, p_key);
  c.claim := CASE
    WHEN b.outcome = 'done' AND (b.route IS DISTINCT FROM p_route OR b.request_hash IS DISTINCT FROM p_hash) THEN 'conflito'
    ELSE b.outcome END;
  IF c.claim = 'done' THEN
    c.status_code := b.status_code;
    c.resource_id := b.resource_id;
    c.codigo := b.codigo;
    c.motivo := b.motivo;
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
  RETURN QUERY SELECT 'new'::text, 201, NULL::text, NULL::text, NULL::text, NULL::int, api_movimento_json(p_conta_id, m.id);
END $$;
