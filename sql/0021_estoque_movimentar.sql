-- A stock movement of finished parts (contract §4.2) in one round trip: check the references and
-- the variation's minimum and multiple, lock the balance row (creating it at 0 on a first entry),
-- move it and record the movement. The movement's insert fires estoque.movimentado
-- (0040_eventos_catalogo_estoque.sql), so balance, movement and event commit together.
--
-- A refusal is returned, not raised: recusa names the 422 motivo and nothing was written, so the
-- caller decides what to say without parsing error messages.

CREATE TYPE estoque_movimento AS (
  recusa text,           -- NULL when the movement was made; else referencia_invalida, abaixo_do_minimo,
                         -- fora_do_multiplo or saldo_insuficiente
  limite int,            -- with a refusal of the quantity: the minimum, the multiple or the balance
                         -- it did not respect
  id uuid,
  tipo text,
  variacao_id uuid,
  parte_id uuid,
  local_id uuid,
  quantidade int,
  saldo_antes int,
  saldo_depois int,
  motivo text,
  observacao text,
  criado_em timestamptz
);

CREATE FUNCTION estoque_movimentar(
  p_conta_id uuid,
  p_tipo text,
  p_variacao_id uuid,
  p_parte_id uuid,
  p_quantidade int,      -- entrada and saida
  p_contado int,         -- ajuste: the counted balance
  p_motivo text,
  p_observacao text,
  p_local_id uuid DEFAULT NULL  -- NULL: the account's own location (the only one the API moves)
) RETURNS estoque_movimento
LANGUAGE plpgsql AS $$
DECLARE
  r estoque_movimento;
  v_produto_id uuid;
  v_minima int;
  v_multiplo int;
  v_saldo_id uuid;
BEGIN
  IF p_tipo NOT IN ('entrada', 'saida', 'ajuste')
     OR (p_tipo = 'ajuste') <> (p_contado IS NOT NULL)
     OR (p_tipo = 'ajuste') = (p_quantidade IS NOT NULL) THEN
    RAISE EXCEPTION 'estoque_movimentar: % needs %', p_tipo,
      CASE WHEN p_tipo = 'ajuste' THEN 'contado only' ELSE 'quantidade only' END
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  -- Another account's variation, part or location looks exactly like a missing one.
  SELECT produto_id, quantidade_minima, multiplo INTO v_produto_id, v_minima, v_multiplo
    FROM variacoes WHERE conta_id = p_conta_id AND id = p_variacao_id;
  IF NOT FOUND
     OR (p_parte_id IS NOT NULL AND NOT EXISTS (
          SELECT 1 FROM partes WHERE conta_id = p_conta_id AND variacao_id = p_variacao_id AND id = p_parte_id)) THEN
    r.recusa := 'referencia_invalida';
    RETURN r;
  END IF;
  IF p_local_id IS NULL THEN
    SELECT id INTO r.local_id FROM locais WHERE conta_id = p_conta_id AND tipo = 'proprio';
  ELSE
    SELECT id INTO r.local_id FROM locais WHERE conta_id = p_conta_id AND id = p_local_id;
  END IF;
  IF r.local_id IS NULL THEN
    r.recusa := 'referencia_invalida';
    RETURN r;
  END IF;

  -- Quantities moved respect the variation's minimum and multiple; a count is a fact and does not.
  IF p_tipo <> 'ajuste' THEN
    IF p_quantidade < v_minima THEN
      r.recusa := 'abaixo_do_minimo';
      r.limite := v_minima;
      RETURN r;
    END IF;
    IF p_quantidade % v_multiplo <> 0 THEN
      r.recusa := 'fora_do_multiplo';
      r.limite := v_multiplo;
      RETURN r;
    END IF;
  END IF;

  -- The row lock serializes movements of one balance: each sees the balance the previous one left.
  SELECT id, saldo INTO v_saldo_id, r.saldo_antes
    FROM estoque_saldos
   WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = p_variacao_id
     AND parte_id IS NOT DISTINCT FROM p_parte_id
     FOR UPDATE;
  IF NOT FOUND THEN
    IF p_tipo = 'saida' THEN
      r.recusa := 'saldo_insuficiente';
      r.limite := 0;
      RETURN r;
    END IF;
    -- A concurrent first movement may create the row first; then lock theirs.
    INSERT INTO estoque_saldos (conta_id, local_id, produto_id, variacao_id, parte_id, saldo)
    VALUES (p_conta_id, r.local_id, v_produto_id, p_variacao_id, p_parte_id, 0)
    ON CONFLICT DO NOTHING;
    SELECT id, saldo INTO v_saldo_id, r.saldo_antes
      FROM estoque_saldos
     WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = p_variacao_id
       AND parte_id IS NOT DISTINCT FROM p_parte_id
       FOR UPDATE;
  END IF;

  IF p_tipo = 'entrada' THEN
    r.quantidade := p_quantidade;
    r.saldo_depois := r.saldo_antes + p_quantidade;
  ELSIF p_tipo = 'saida' THEN
    IF r.saldo_antes < p_quantidade THEN
      r.recusa := 'saldo_insuficiente';
      r.limite := r.saldo_antes;
      r.saldo_antes := NULL;
      RETURN r;
    END IF;
    r.quantidade := p_quantidade;
    r.saldo_depois := r.saldo_antes - p_quantidade;
  ELSE
    r.quantidade := p_contado - r.saldo_antes;
    r.saldo_depois := p_contado;
  END IF;

  UPDATE estoque_saldos SET saldo = r.saldo_depois WHERE conta_id = p_conta_id AND id = v_saldo_id;
  -- criado_em is taken under the lock (not the transaction's start), so the movements of a balance
  -- ordered by criado_em chain saldo_depois to the next saldo_antes.
  INSERT INTO estoque_movimentos (conta_id, local_id, variacao_id, parte_id, tipo, quantidade, saldo_antes,
                                  saldo_depois, motivo, observacao, via, chave_id, criado_em)
  VALUES (p_conta_id, r.local_id, p_variacao_id, p_parte_id, p_tipo, r.quantidade, r.saldo_antes,
          r.saldo_depois, p_motivo, p_observacao,
          coalesce(nullif(current_setting('app.via', true), ''), 'tela'),
          nullif(current_setting('app.chave_id', true), '')::uuid, clock_timestamp())
  RETURNING id, criado_em INTO r.id, r.criado_em;
  r.tipo := p_tipo;
  r.variacao_id := p_variacao_id;
  r.parte_id := p_parte_id;
  r.motivo := p_motivo;
  r.observacao := p_observacao;
  RETURN r;
END $$;
