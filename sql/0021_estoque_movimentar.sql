-- A stock movement of finished parts (contract §4.2) in one round trip: check the references and
-- the variation's minimum and multiple, move the balance under its row lock (creating it on a first
-- entry) and record the movement. The movement's insert fires estoque.movimentado
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
  SELECT v.produto_id, v.quantidade_minima, v.multiplo, l.id INTO v_produto_id, v_minima, v_multiplo, r.local_id
    FROM variacoes v
    JOIN locais l ON l.conta_id = v.conta_id
     AND l.id = coalesce(p_local_id, (SELECT id FROM locais WHERE conta_id = p_conta_id AND tipo = 'proprio'))
   WHERE v.conta_id = p_conta_id AND v.id = p_variacao_id
     AND (p_parte_id IS NULL OR EXISTS (
          SELECT 1 FROM partes WHERE conta_id = p_conta_id AND variacao_id = p_variacao_id AND id = p_parte_id));
  IF NOT FOUND THEN
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

  -- Each branch moves the balance in one statement that takes its row lock, so concurrent
  -- movements of one balance queue there and each sees the balance the previous one left
  -- (READ COMMITTED re-checks saldo >= quantidade on the newest version after the wait).
  IF p_tipo = 'saida' THEN
    UPDATE estoque_saldos SET saldo = saldo - p_quantidade
     WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = p_variacao_id
       AND parte_id IS NOT DISTINCT FROM p_parte_id AND saldo >= p_quantidade
    RETURNING saldo INTO r.saldo_depois;
    IF NOT FOUND THEN
      -- Only for the refusal's text: the balance as it stands (0 when there never was one).
      SELECT saldo INTO r.limite FROM estoque_saldos
       WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = p_variacao_id
         AND parte_id IS NOT DISTINCT FROM p_parte_id;
      r.recusa := 'saldo_insuficiente';
      r.limite := coalesce(r.limite, 0);
      RETURN r;
    END IF;
    r.quantidade := p_quantidade;
    r.saldo_antes := r.saldo_depois + p_quantidade;
  ELSIF p_tipo = 'entrada' THEN
    -- The first entry creates the balance; a concurrent first entry turns into an update.
    INSERT INTO estoque_saldos AS s (conta_id, local_id, produto_id, variacao_id, parte_id, saldo)
    VALUES (p_conta_id, r.local_id, v_produto_id, p_variacao_id, p_parte_id, p_quantidade)
    ON CONFLICT (conta_id, local_id, variacao_id, parte_id) DO UPDATE SET saldo = s.saldo + excluded.saldo
    RETURNING s.saldo INTO r.saldo_depois;
    r.quantidade := p_quantidade;
    r.saldo_antes := r.saldo_depois - p_quantidade;
  ELSE
    -- An adjustment needs the balance before it: lock the row (creating it at 0 if new) first.
    INSERT INTO estoque_saldos (conta_id, local_id, produto_id, variacao_id, parte_id, saldo)
    VALUES (p_conta_id, r.local_id, v_produto_id, p_variacao_id, p_parte_id, 0)
    ON CONFLICT DO NOTHING;
    SELECT id, saldo INTO v_saldo_id, r.saldo_antes
      FROM estoque_saldos
     WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = p_variacao_id
       AND parte_id IS NOT DISTINCT FROM p_parte_id
       FOR UPDATE;
    r.quantidade := p_contado - r.saldo_antes;
    r.saldo_depois := p_contado;
    UPDATE estoque_saldos SET saldo = p_contado WHERE conta_id = p_conta_id AND id = v_saldo_id;
  END IF;

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
