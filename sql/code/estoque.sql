-- Stock of finished parts and supplies: movements in one round trip (estoque_movimentar, the core
-- every entry point calls), their estoque.movimentado event, and estoque.baixo when a supply falls
-- below its minimum.

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
-- chosen, but its row not yet written: estoque_movimentar writes the movements it prepared together.
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

-- Movements, the one core of every entry point (api_estoque_movimentar, api_estoque_movimentar_lote,
-- the operator CLI): each prepared (estoque_movimento_preparar) in the order of its balance, so two
-- calls never wait on each other in a circle, then the ones made written in one INSERT, which prepares
-- the table's CHECKs once instead of at every movement (ExecConstraints reads each back from its
-- stored node tree at every execution: docs/decisions/0016-checks-on-hot-tables.md). Answers each
-- movement in the order given: made, or refused (recusa); with p_isolar, failed (erros).
--
-- p_lote: a batch all or none (POST /estoque/movimentos/lote): its id and each movement's place in
-- it are written with the movements; when any is refused nothing is, and the balances it moved are
-- moved back. p_isolar: a failure fails only its movement: the movements run as one subtransaction
-- and, only when one of them failed, again each in a subtransaction of its own (a subtransaction for
-- every movement always was a steady cost for a rare failure: docs/decisions/0025-stock-movements-by-balance.md).
CREATE FUNCTION estoque_movimentar(
  p_via text, p_contas uuid[], p_chaves uuid[],  -- who makes each (p_via NULL: as the transaction declared, origem_da_mudanca)
  p_tipos text[], p_variacoes uuid[], p_skus text[], p_partes uuid[], p_quantidades int[], p_contados int[],
  p_motivos text[], p_observacoes text[], p_referencias text[], p_metadados jsonb[],
  p_locais uuid[] DEFAULT NULL,    -- NULL: each account's own location (the only one the API moves)
  p_fazer boolean[] DEFAULT NULL,  -- false: a movement its caller answers without making it; NULL: all
  p_lote uuid DEFAULT NULL,
  p_isolar boolean DEFAULT false,
  OUT movimentos estoque_movimento[], OUT erros json[]
)
LANGUAGE plpgsql AS $$
DECLARE
  o jsonb := CASE WHEN p_via IS NULL THEN origem_da_mudanca() END;
  v_ordem int[];       -- the movements to make, in the order of their balances
  v_variacoes uuid[];  -- each one's variation, named or found by its SKU
  v_total int;
  v_de int := 1;       -- a pass makes v_ordem[v_de:v_ate]: all of it, or after a failure one at a time
  v_ate int;
  v_isolado boolean := false;
  i int;
  mv estoque_movimento;
  v_recusado boolean;
  n int;
  w_contas uuid[]; w_chaves uuid[]; w_movimentos estoque_movimento[]; w_posicoes int[];
BEGIN
  -- A movement by SKU goes where its variation's balance does, and is moved by the variation found
  -- here (only those pay for the lookup, once); a SKU that names none goes on to
  -- estoque_movimento_preparar, which says why.
  SELECT array_agg(x.i ORDER BY x.conta_id, p_locais[x.i], x.variacao, p_partes[x.i], x.i) FILTER (WHERE p_fazer[x.i] IS NOT FALSE),
         array_agg(x.variacao ORDER BY x.i)
    INTO v_ordem, v_variacoes
    FROM (SELECT u.i::int AS i, u.conta_id,
                 coalesce(p_variacoes[u.i], (estoque_variacao_do_sku(u.conta_id, p_skus[u.i])).variacao) AS variacao
            FROM unnest(p_contas) WITH ORDINALITY AS u (conta_id, i)) x;
  movimentos := array_fill(NULL::estoque_movimento, ARRAY[cardinality(p_contas)]);
  v_total := coalesce(cardinality(v_ordem), 0);
  v_ate := v_total;
  WHILE v_de <= v_total LOOP
    BEGIN
      n := 0; v_recusado := false;
      w_contas := '{}'; w_chaves := '{}'; w_movimentos := '{}'; w_posicoes := '{}';
      FOR k IN v_de..v_ate LOOP
        i := v_ordem[k];
        mv := estoque_movimento_preparar(p_contas[i], p_tipos[i], v_variacoes[i], p_partes[i], p_quantidades[i], p_contados[i],
                                         p_motivos[i], p_observacoes[i], p_locais[i], CASE WHEN v_variacoes[i] IS NULL THEN p_skus[i] END,
                                         p_referencias[i], p_metadados[i]);
        movimentos[i] := mv;
        IF mv.recusa IS NOT NULL THEN
          v_recusado := true;
          CONTINUE;
        END IF;
        n := n + 1;
        w_contas[n] := p_contas[i]; w_movimentos[n] := mv;
        w_chaves[n] := coalesce(p_chaves[i], (o ->> 'chave_id')::uuid);
        w_posicoes[n] := CASE WHEN p_lote IS NOT NULL THEN i - 1 END;
      END LOOP;
      IF v_recusado AND p_lote IS NOT NULL THEN
        RAISE EXCEPTION 'a batch of movements with refused items writes nothing' USING ERRCODE = 'PF422';
      END IF;
      IF n > 0 THEN
        -- unnest spreads each movement into its fields.
        INSERT INTO estoque_movimentos (conta_id, id, local_id, variacao_id, parte_id, tipo, quantidade, saldo_antes,
                                        saldo_depois, motivo, observacao, via, chave_id, criado_em, referencia_externa,
                                        metadados, lote_id, lote_posicao)
        SELECT x.conta_id, x.id, x.local_id, x.variacao_id, x.parte_id, x.tipo, x.quantidade, x.saldo_antes,
               x.saldo_depois, x.motivo, x.observacao, coalesce(p_via, o ->> 'via'), x.chave_id, x.criado_em, x.referencia_externa,
               x.metadados, p_lote, x.lote_posicao
          FROM unnest(w_contas, w_chaves, w_posicoes, w_movimentos) AS x (conta_id, chave_id, lote_posicao);
      END IF;
    EXCEPTION
      WHEN SQLSTATE 'PF422' THEN
        RETURN;
      WHEN OTHERS THEN
        IF NOT p_isolar THEN
          RAISE;
        ELSIF v_isolado THEN
          movimentos[i] := NULL;
          erros[i] := json_build_object('erro', SQLSTATE, 'mensagem', SQLERRM);
        ELSE
          v_isolado := true;
          v_ate := 0;  -- again from the first, one at a time
        END IF;
    END;
    v_de := v_ate + 1;
    v_ate := v_de;
  END LOOP;
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
