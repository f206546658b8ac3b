-- Stock of finished parts and supplies: a movement in one round trip (estoque_movimentar), its
-- estoque.movimentado event, and estoque.baixo when a supply falls below its minimum.

CREATE TRIGGER estoque_saldos_touch BEFORE UPDATE ON estoque_saldos
  FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER insumos_touch BEFORE UPDATE ON insumos FOR EACH ROW EXECUTE FUNCTION touch_row();

-- The variation a SKU names (POST /estoque/movimentos with sku): a variation's SKU, or the SKU of a
-- product with exactly one variation. NULL when it names none; candidatas says how many variations
-- the SKU could mean (0: none of this account; more than 1: a product with several variations,
-- which a movement refuses as sku_ambiguo rather than guess).
CREATE FUNCTION estoque_variacao_do_sku(p_conta_id uuid, p_sku text, OUT variacao uuid, OUT candidatas int)
LANGUAGE plpgsql STABLE AS $$
BEGIN
  SELECT v.id, 1 INTO variacao, candidatas FROM variacoes v WHERE v.conta_id = p_conta_id AND v.sku = p_sku;
  IF FOUND THEN
    RETURN;
  END IF;
  SELECT count(v.id)::int, CASE WHEN count(v.id) = 1 THEN (array_agg(v.id))[1] END INTO candidatas, variacao
    FROM produtos p JOIN variacoes v ON v.conta_id = p.conta_id AND v.produto_id = p.id
   WHERE p.conta_id = p_conta_id AND p.sku = p_sku;
END $$;

-- A movement, prepared: checked, its balance moved (the row lock taken), its id and criado_em
-- chosen, but its row not yet written. estoque_movimentos_gravar writes it; a batch writes all its
-- movements in one INSERT, which prepares the table's CHECKs once instead of at every movement
-- (ExecConstraints reads each back from its stored node tree at every execution:
-- docs/decisions/0016-checks-on-hot-tables.md).
CREATE FUNCTION estoque_movimento_preparar(
  p_conta_id uuid,
  p_tipo text,
  p_variacao_id uuid,    -- or NULL with p_sku
  p_parte_id uuid,
  p_quantidade int,      -- entrada and saida
  p_contado int,         -- ajuste: the counted balance
  p_motivo text,
  p_observacao text,
  p_local_id uuid DEFAULT NULL,  -- NULL: the account's own location (the only one the API moves)
  p_sku text DEFAULT NULL,       -- instead of p_variacao_id (estoque_variacao_do_sku)
  p_referencia_externa text DEFAULT NULL,
  p_metadados jsonb DEFAULT NULL
) RETURNS estoque_movimento
LANGUAGE plpgsql AS $$
DECLARE
  r estoque_movimento;
  v_variacao_id uuid := p_variacao_id;
  v_produto_id uuid;
  v_minima int;
  v_multiplo int;
  v_saldo_id uuid;
  v_candidatas int;
BEGIN
  IF p_tipo NOT IN ('entrada', 'saida', 'ajuste')
     OR (p_tipo = 'ajuste') <> (p_contado IS NOT NULL)
     OR (p_tipo = 'ajuste') = (p_quantidade IS NOT NULL) THEN
    RAISE EXCEPTION 'estoque_movimentar: % needs %', p_tipo,
      CASE WHEN p_tipo = 'ajuste' THEN 'contado only' ELSE 'quantidade only' END
      USING ERRCODE = 'invalid_parameter_value';
  END IF;
  IF (p_variacao_id IS NULL) = (p_sku IS NULL) THEN
    RAISE EXCEPTION 'estoque_movimentar: a variation needs variacao_id or sku, not both'
      USING ERRCODE = 'invalid_parameter_value';
  END IF;

  IF p_sku IS NOT NULL THEN
    SELECT s.variacao, s.candidatas INTO v_variacao_id, v_candidatas FROM estoque_variacao_do_sku(p_conta_id, p_sku) s;
    IF v_variacao_id IS NULL THEN
      r.recusa := CASE WHEN v_candidatas > 1 THEN 'sku_ambiguo' ELSE 'referencia_invalida' END;
      r.limite := nullif(v_candidatas, 0);
      RETURN r;
    END IF;
  END IF;

  -- Another account's variation, part or location looks exactly like a missing one.
  SELECT v.produto_id, v.quantidade_minima, v.multiplo, l.id INTO v_produto_id, v_minima, v_multiplo, r.local_id
    FROM variacoes v
    JOIN locais l ON l.conta_id = v.conta_id
     AND l.id = coalesce(p_local_id, (SELECT id FROM locais WHERE conta_id = p_conta_id AND tipo = 'proprio'))
   WHERE v.conta_id = p_conta_id AND v.id = v_variacao_id
     AND (p_parte_id IS NULL OR EXISTS (
          SELECT 1 FROM partes WHERE conta_id = p_conta_id AND variacao_id = v_variacao_id AND id = p_parte_id));
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
     WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = v_variacao_id
       AND parte_id IS NOT DISTINCT FROM p_parte_id AND saldo >= p_quantidade
    RETURNING saldo INTO r.saldo_depois;
    IF NOT FOUND THEN
      -- Only for the refusal's text: the balance as it stands (0 when there never was one).
      SELECT saldo INTO r.limite FROM estoque_saldos
       WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = v_variacao_id
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
    VALUES (p_conta_id, r.local_id, v_produto_id, v_variacao_id, p_parte_id, p_quantidade)
    ON CONFLICT (conta_id, local_id, variacao_id, parte_id) DO UPDATE SET saldo = s.saldo + excluded.saldo
    RETURNING s.saldo INTO r.saldo_depois;
    r.quantidade := p_quantidade;
    r.saldo_antes := r.saldo_depois - p_quantidade;
  ELSE
    -- An adjustment needs the balance before it: lock the row (creating it at 0 if new) first.
    INSERT INTO estoque_saldos (conta_id, local_id, produto_id, variacao_id, parte_id, saldo)
    VALUES (p_conta_id, r.local_id, v_produto_id, v_variacao_id, p_parte_id, 0)
    ON CONFLICT DO NOTHING;
    SELECT id, saldo INTO v_saldo_id, r.saldo_antes
      FROM estoque_saldos
     WHERE conta_id = p_conta_id AND local_id = r.local_id AND variacao_id = v_variacao_id
       AND parte_id IS NOT DISTINCT FROM p_parte_id
       FOR UPDATE;
    r.quantidade := p_contado - r.saldo_antes;
    r.saldo_depois := p_contado;
    UPDATE estoque_saldos SET saldo = p_contado WHERE conta_id = p_conta_id AND id = v_saldo_id;
  END IF;

  -- criado_em is taken under the lock (not the transaction's start), so the movements of a balance
  -- ordered by criado_em chain saldo_depois to the next saldo_antes.
  r.id := gen_random_uuid();
  r.criado_em := clock_timestamp();
  r.tipo := p_tipo;
  r.variacao_id := v_variacao_id;
  r.parte_id := p_parte_id;
  r.motivo := p_motivo;
  r.observacao := p_observacao;
  r.referencia_externa := p_referencia_externa;
  r.metadados := coalesce(p_metadados, '{}');
  RETURN r;
END $$;

-- Writes prepared movements (estoque_movimento_preparar), in the order given, in one statement: who
-- made them (p_via, and the API key of each, or NULL) and, for POST /estoque/movimentos/lote, the
-- batch and each one's place in it.
CREATE FUNCTION estoque_movimentos_gravar(
  p_via text, p_contas uuid[], p_chaves uuid[], p_movimentos estoque_movimento[],
  p_lotes uuid[] DEFAULT NULL, p_posicoes int[] DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  -- unnest pads the shorter arrays (no batch) with NULLs, and spreads each movement into its fields.
  INSERT INTO estoque_movimentos (conta_id, id, local_id, variacao_id, parte_id, tipo, quantidade, saldo_antes,
                                  saldo_depois, motivo, observacao, via, chave_id, criado_em, referencia_externa,
                                  metadados, lote_id, lote_posicao)
  SELECT x.conta_id, x.id, x.local_id, x.variacao_id, x.parte_id, x.tipo, x.quantidade, x.saldo_antes,
         x.saldo_depois, x.motivo, x.observacao, p_via, x.chave_id, x.criado_em, x.referencia_externa,
         x.metadados, x.lote_id, x.lote_posicao
    FROM unnest(p_contas, p_chaves, p_lotes, p_posicoes, p_movimentos) AS x (conta_id, chave_id, lote_id, lote_posicao);
END $$;

-- A movement made in one call (the screen's path: the operator CLI, shared/db/estoque.ts): prepared
-- and written, by whoever the transaction declared (origem_da_mudanca). Its parameters are
-- estoque_movimento_preparar's.
CREATE FUNCTION estoque_movimentar(
  p_conta_id uuid,
  p_tipo text,
  p_variacao_id uuid,
  p_parte_id uuid,
  p_quantidade int,
  p_contado int,
  p_motivo text,
  p_observacao text,
  p_local_id uuid DEFAULT NULL,
  p_sku text DEFAULT NULL,
  p_referencia_externa text DEFAULT NULL,
  p_metadados jsonb DEFAULT NULL
) RETURNS estoque_movimento
LANGUAGE plpgsql AS $$
DECLARE
  r estoque_movimento;
  o jsonb := origem_da_mudanca();
BEGIN
  r := estoque_movimento_preparar(p_conta_id, p_tipo, p_variacao_id, p_parte_id, p_quantidade, p_contado, p_motivo,
                                  p_observacao, p_local_id, p_sku, p_referencia_externa, p_metadados);
  IF r.recusa IS NULL THEN
    PERFORM estoque_movimentos_gravar(o ->> 'via', ARRAY[p_conta_id], ARRAY[(o ->> 'chave_id')::uuid], ARRAY[r]);
  END IF;
  RETURN r;
END $$;

-- estoque.movimentado's data: the movement, with its id and its external references.
CREATE FUNCTION estoque_movimentado_dados(m estoque_movimentos) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('objeto', 'estoque', 'variacao_id', m.variacao_id, 'local_id', m.local_id, 'tipo', m.tipo,
                            'movimento_id', m.id) || referencias_do_registro(m.referencia_externa, m.metadados)
$$;

-- estoque.movimentado: grouped per variation by emit_event; the event carries the latest movement
-- (evento_agrupado_atual).
CREATE FUNCTION estoque_movimentos_emitir() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'estoque.movimentado', estoque_movimentado_dados(NEW));
  RETURN NULL;
END $$;
CREATE TRIGGER estoque_movimentos_emitir AFTER INSERT ON estoque_movimentos
  FOR EACH ROW EXECUTE FUNCTION estoque_movimentos_emitir();

-- estoque.baixo: a new warning goes out only when the supply's last one (insumo_avisos) was on an
-- earlier calendar day in the account's time zone; the upsert's row lock makes two concurrent
-- transactions agree on which of them warns.
CREATE FUNCTION insumos_avisar_baixo() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_fuso text;
  v_avisar boolean;
BEGIN
  SELECT fuso_horario INTO v_fuso FROM contas WHERE id = NEW.conta_id;
  INSERT INTO insumo_avisos AS a (conta_id, insumo_id, avisado_em)
  VALUES (NEW.conta_id, NEW.id, now())
  ON CONFLICT (conta_id, insumo_id) DO UPDATE SET avisado_em = excluded.avisado_em
   WHERE (a.avisado_em AT TIME ZONE v_fuso)::date < (excluded.avisado_em AT TIME ZONE v_fuso)::date
  RETURNING true INTO v_avisar;
  IF v_avisar THEN
    PERFORM emit_event(NEW.conta_id, 'estoque.baixo', jsonb_build_object(
      'objeto', 'insumo',
      'insumo', jsonb_build_object('tipo', NEW.tipo, 'id', NEW.id),
      'abaixo_do_minimo', true));
  END IF;
  RETURN NULL;
END $$;
-- A balance that falls below its minimum (by any path: consumption, correction, a raised minimum),
-- or keeps falling while below it; the daily limit keeps that to one warning a day.
CREATE TRIGGER insumos_avisar_baixo_ao_criar AFTER INSERT ON insumos
  FOR EACH ROW WHEN (NEW.saldo < NEW.minimo) EXECUTE FUNCTION insumos_avisar_baixo();
CREATE TRIGGER insumos_avisar_baixo AFTER UPDATE OF saldo, minimo ON insumos
  FOR EACH ROW WHEN (NEW.saldo < NEW.minimo AND (OLD.saldo >= OLD.minimo OR NEW.saldo < OLD.saldo))
  EXECUTE FUNCTION insumos_avisar_baixo();
