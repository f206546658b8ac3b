-- Rules that hold whoever writes: sequential codes per account, the state machines of DESIGN §10,
-- and parents whose version moves when their items change (ETags stay honest).

CREATE FUNCTION proximo_numero(p_conta_id uuid, p_tipo text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_numero int;
BEGIN
  IF p_tipo = 'cotacao' THEN
    UPDATE contas SET ultimo_numero_cotacao = ultimo_numero_cotacao + 1
     WHERE id = p_conta_id RETURNING ultimo_numero_cotacao INTO v_numero;
  ELSE
    UPDATE contas SET ultimo_numero_pedido = ultimo_numero_pedido + 1
     WHERE id = p_conta_id RETURNING ultimo_numero_pedido INTO v_numero;
  END IF;
  RETURN v_numero;
END $$;

-- Every quotation starts as a draft (contract §3) and every order as aberto: later states are
-- reached only through the transitions below, so versao, enviada_em, finalizado_em and the events
-- always agree with the state.
CREATE FUNCTION cotacoes_numerar() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status <> 'rascunho' THEN
    PERFORM recusar_transicao('quotation', 'nova', NEW.status);
  END IF;
  IF NEW.numero IS NULL THEN
    NEW.numero := proximo_numero(NEW.conta_id, 'cotacao');
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER cotacoes_numerar BEFORE INSERT ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION cotacoes_numerar();

CREATE FUNCTION pedidos_numerar() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.situacao <> 'aberto' THEN
    PERFORM recusar_transicao('production order', 'novo', NEW.situacao);
  END IF;
  IF NEW.numero IS NULL THEN
    NEW.numero := proximo_numero(NEW.conta_id, 'pedido');
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pedidos_numerar BEFORE INSERT ON pedidos_producao
  FOR EACH ROW EXECUTE FUNCTION pedidos_numerar();

-- A refused transition raises check_violation on a named pseudo-constraint; shared/errors.ts maps
-- it to 422 with motivo transicao_invalida.
CREATE FUNCTION recusar_transicao(p_objeto text, p_de text, p_para text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% cannot go from % to %', p_objeto, p_de, p_para
    USING ERRCODE = 'check_violation', CONSTRAINT = 'transicao_invalida';
END $$;

CREATE FUNCTION cotacao_transicao_permitida(p_de text, p_para text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT (p_de, p_para) IN (
    ('rascunho', 'enviada'), ('rascunho', 'cancelada'),
    ('enviada', 'aprovada'), ('enviada', 'recusada'), ('enviada', 'rascunho'), ('enviada', 'expirada'),
    ('recusada', 'rascunho'))
$$;

CREATE FUNCTION cotacoes_transicao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.status IS DISTINCT FROM OLD.status THEN
    IF NOT cotacao_transicao_permitida(OLD.status, NEW.status) THEN
      PERFORM recusar_transicao('quotation', OLD.status, NEW.status);
    END IF;
    -- Sending again after a revision is a new version of the quotation.
    IF NEW.status = 'enviada' THEN
      IF OLD.enviada_em IS NOT NULL THEN
        NEW.versao := OLD.versao + 1;
      END IF;
      NEW.enviada_em := now();
    END IF;
  END IF;
  IF NEW.link_aberturas < OLD.link_aberturas THEN
    RAISE EXCEPTION 'the openings of a quotation link only grow'
      USING ERRCODE = 'check_violation', CONSTRAINT = 'link_aberturas_decrescente';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER cotacoes_transicao BEFORE UPDATE ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION cotacoes_transicao();

-- Like touch_row('versioned'), except that the customer opening the link (only link_aberturas
-- moving) is not a change of the quotation's representation: its ETag stays valid.
CREATE FUNCTION cotacoes_touch() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.link_aberturas <> OLD.link_aberturas
     -- codigo is generated, not yet computed in NEW of a BEFORE trigger; numero stands for it.
     AND to_jsonb(NEW) - '{link_aberturas,codigo}'::text[] = to_jsonb(OLD) - '{link_aberturas,codigo}'::text[] THEN
    RETURN NEW;
  END IF;
  NEW.atualizado_em := now();
  NEW.row_version := OLD.row_version + 1;
  RETURN NEW;
END $$;
CREATE TRIGGER cotacoes_touch BEFORE UPDATE ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION cotacoes_touch();

-- What the customer received is frozen: items change only while the quotation is a draft (a
-- revision takes it back to rascunho). The parent is locked so a concurrent send waits for the
-- item change to commit. A parent already gone is a cascade from its deletion.
CREATE FUNCTION cotacao_itens_editavel() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
BEGIN
  SELECT status INTO v_status FROM cotacoes
   WHERE conta_id = coalesce(NEW.conta_id, OLD.conta_id) AND id = coalesce(NEW.cotacao_id, OLD.cotacao_id)
     FOR SHARE;
  IF FOUND AND v_status <> 'rascunho' THEN
    RAISE EXCEPTION 'the items of a quotation in status % cannot change', v_status
      USING ERRCODE = 'check_violation', CONSTRAINT = 'cotacao_nao_editavel';
  END IF;
  IF TG_OP = 'DELETE' THEN
    RETURN OLD;
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER cotacao_itens_editavel BEFORE INSERT OR UPDATE OR DELETE ON cotacao_itens
  FOR EACH ROW EXECUTE FUNCTION cotacao_itens_editavel();

CREATE FUNCTION pedido_transicao_permitida(p_de text, p_para text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT (p_de, p_para) IN (
    ('aberto', 'em_producao'), ('aberto', 'cancelado'),
    ('em_producao', 'finalizado'), ('em_producao', 'cancelado'), ('em_producao', 'aberto'))
$$;

-- Payment only moves forward: nao_pago → sinal_pago → pago (paying in full at once is allowed).
CREATE FUNCTION pagamento_transicao_permitida(p_de text, p_para text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT (p_de, p_para) IN (('nao_pago', 'sinal_pago'), ('nao_pago', 'pago'), ('sinal_pago', 'pago'))
$$;

CREATE FUNCTION pedidos_transicao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.situacao IS DISTINCT FROM OLD.situacao THEN
    IF NOT pedido_transicao_permitida(OLD.situacao, NEW.situacao) THEN
      PERFORM recusar_transicao('production order', OLD.situacao, NEW.situacao);
    END IF;
    IF NEW.situacao = 'finalizado' THEN
      NEW.finalizado_em := now();
    END IF;
  END IF;
  IF NEW.pagamento_situacao IS DISTINCT FROM OLD.pagamento_situacao
     AND NOT pagamento_transicao_permitida(OLD.pagamento_situacao, NEW.pagamento_situacao) THEN
    PERFORM recusar_transicao('payment', OLD.pagamento_situacao, NEW.pagamento_situacao);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pedidos_transicao BEFORE UPDATE ON pedidos_producao
  FOR EACH ROW EXECUTE FUNCTION pedidos_transicao();

-- Only an approved quotation becomes production (aprovada is final, so the check cannot go stale).
CREATE FUNCTION pedidos_cotacao_aprovada() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.cotacao_id IS NOT NULL AND NOT EXISTS (
       SELECT 1 FROM cotacoes WHERE conta_id = NEW.conta_id AND id = NEW.cotacao_id AND status = 'aprovada') THEN
    RAISE EXCEPTION 'quotation % is not approved', NEW.cotacao_id
      USING ERRCODE = 'check_violation', CONSTRAINT = 'cotacao_nao_aprovada';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pedidos_cotacao_aprovada BEFORE INSERT OR UPDATE OF cotacao_id ON pedidos_producao
  FOR EACH ROW EXECUTE FUNCTION pedidos_cotacao_aprovada();
CREATE TRIGGER pedidos_touch BEFORE UPDATE ON pedidos_producao
  FOR EACH ROW EXECUTE FUNCTION touch_row('versioned');

CREATE FUNCTION pedido_itens_transicao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.situacao IS DISTINCT FROM OLD.situacao
     AND NOT (OLD.situacao = 'ativo' AND NEW.situacao IN ('finalizado', 'retirado')) THEN
    PERFORM recusar_transicao('order item', OLD.situacao, NEW.situacao);
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pedido_itens_transicao BEFORE UPDATE ON pedido_itens
  FOR EACH ROW EXECUTE FUNCTION pedido_itens_transicao();

-- An item added, changed or removed is a change of its order (new ETag, new atualizado_em). Per
-- statement, so an order created with many items is touched once, not once per item.
CREATE FUNCTION pedido_itens_tocar_pedido() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    UPDATE pedidos_producao p SET atualizado_em = now()
      FROM (SELECT DISTINCT conta_id, pedido_id FROM novos) x
     WHERE p.conta_id = x.conta_id AND p.id = x.pedido_id;
  ELSIF TG_OP = 'DELETE' THEN
    UPDATE pedidos_producao p SET atualizado_em = now()
      FROM (SELECT DISTINCT conta_id, pedido_id FROM velhos) x
     WHERE p.conta_id = x.conta_id AND p.id = x.pedido_id;
  ELSE
    UPDATE pedidos_producao p SET atualizado_em = now()
      FROM (SELECT DISTINCT n.conta_id, n.pedido_id FROM novos n
              JOIN velhos o ON o.conta_id = n.conta_id AND o.id = n.id
             WHERE n IS DISTINCT FROM o) x
     WHERE p.conta_id = x.conta_id AND p.id = x.pedido_id;
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER pedido_itens_tocar_pedido_ins AFTER INSERT ON pedido_itens
  REFERENCING NEW TABLE AS novos FOR EACH STATEMENT EXECUTE FUNCTION pedido_itens_tocar_pedido();
CREATE TRIGGER pedido_itens_tocar_pedido_upd AFTER UPDATE ON pedido_itens
  REFERENCING OLD TABLE AS velhos NEW TABLE AS novos FOR EACH STATEMENT EXECUTE FUNCTION pedido_itens_tocar_pedido();
CREATE TRIGGER pedido_itens_tocar_pedido_del AFTER DELETE ON pedido_itens
  REFERENCING OLD TABLE AS velhos FOR EACH STATEMENT EXECUTE FUNCTION pedido_itens_tocar_pedido();

-- An order shows its items' stage by name: renaming a stage changes the orders at it.
CREATE FUNCTION etapas_tocar_pedidos() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE pedidos_producao p SET atualizado_em = now()
   WHERE p.conta_id = NEW.conta_id
     AND p.id IN (SELECT i.pedido_id FROM pedido_itens i WHERE i.conta_id = NEW.conta_id AND i.etapa_id = NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER etapas_tocar_pedidos AFTER UPDATE OF nome ON etapas
  FOR EACH ROW WHEN (OLD.nome IS DISTINCT FROM NEW.nome) EXECUTE FUNCTION etapas_tocar_pedidos();

-- Quotation total = sum of its items; kept by the database so no writer can get it wrong. Per
-- statement: a quotation created with many items is totalled once. The UPDATE also moves the
-- quotation's version, so any item change gives it a new ETag.
CREATE FUNCTION cotacao_itens_totalizar() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_contas uuid[];
  v_cotacoes uuid[];
BEGIN
  -- Transition tables exist only for the events their trigger names, hence one branch each.
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(conta_id), array_agg(cotacao_id) INTO v_contas, v_cotacoes
      FROM (SELECT DISTINCT conta_id, cotacao_id FROM novos) t;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(conta_id), array_agg(cotacao_id) INTO v_contas, v_cotacoes
      FROM (SELECT DISTINCT conta_id, cotacao_id FROM velhos) t;
  ELSE
    SELECT array_agg(conta_id), array_agg(cotacao_id) INTO v_contas, v_cotacoes
      FROM (SELECT conta_id, cotacao_id FROM novos UNION SELECT conta_id, cotacao_id FROM velhos) t;
  END IF;
  UPDATE cotacoes c
     SET valor_total_centavos = (
       SELECT coalesce(sum(i.quantidade::bigint * i.preco_unitario_centavos), 0)
         FROM cotacao_itens i WHERE i.conta_id = c.conta_id AND i.cotacao_id = c.id)
    FROM unnest(v_contas, v_cotacoes) AS a (conta_id, cotacao_id)
   WHERE c.conta_id = a.conta_id AND c.id = a.cotacao_id;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacao_itens_totalizar_ins AFTER INSERT ON cotacao_itens
  REFERENCING NEW TABLE AS novos FOR EACH STATEMENT EXECUTE FUNCTION cotacao_itens_totalizar();
CREATE TRIGGER cotacao_itens_totalizar_upd AFTER UPDATE ON cotacao_itens
  REFERENCING OLD TABLE AS velhos NEW TABLE AS novos FOR EACH STATEMENT EXECUTE FUNCTION cotacao_itens_totalizar();
CREATE TRIGGER cotacao_itens_totalizar_del AFTER DELETE ON cotacao_itens
  REFERENCING OLD TABLE AS velhos FOR EACH STATEMENT EXECUTE FUNCTION cotacao_itens_totalizar();

-- A catalog change below a product (variation, part, price tier) is a change of the product.
CREATE FUNCTION catalogo_tocar_produto() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_conta_id uuid := coalesce(NEW.conta_id, OLD.conta_id);
  v_variacao_id uuid;
BEGIN
  IF TG_TABLE_NAME = 'variacoes' THEN
    UPDATE produtos SET atualizado_em = now()
     WHERE conta_id = v_conta_id AND id = coalesce(NEW.produto_id, OLD.produto_id);
    RETURN NULL;
  END IF;
  v_variacao_id := coalesce(NEW.variacao_id, OLD.variacao_id);
  UPDATE produtos p SET atualizado_em = now()
    FROM variacoes v
   WHERE v.conta_id = v_conta_id AND v.id = v_variacao_id
     AND p.conta_id = v.conta_id AND p.id = v.produto_id;
  RETURN NULL;
END $$;
CREATE TRIGGER variacoes_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON variacoes
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();
CREATE TRIGGER partes_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON partes
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();
CREATE TRIGGER precos_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON precos
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();
