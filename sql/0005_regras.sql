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

CREATE FUNCTION cotacoes_numerar() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
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
  RETURN NEW;
END $$;
CREATE TRIGGER cotacoes_transicao BEFORE UPDATE ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION cotacoes_transicao();
CREATE TRIGGER cotacoes_touch BEFORE UPDATE ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION touch_row('versioned');

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

-- An item change is a change of its order (new ETag, new atualizado_em).
CREATE FUNCTION pedido_itens_tocar_pedido() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE pedidos_producao SET atualizado_em = now()
   WHERE conta_id = OLD.conta_id AND id = OLD.pedido_id;
  RETURN NULL;
END $$;
CREATE TRIGGER pedido_itens_tocar_pedido AFTER UPDATE ON pedido_itens
  FOR EACH ROW WHEN (OLD IS DISTINCT FROM NEW) EXECUTE FUNCTION pedido_itens_tocar_pedido();

-- Quotation total = sum of its items; kept by the database so no writer can get it wrong.
CREATE FUNCTION cotacao_itens_totalizar() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_conta_id uuid := coalesce(NEW.conta_id, OLD.conta_id);
  v_cotacao_id uuid := coalesce(NEW.cotacao_id, OLD.cotacao_id);
BEGIN
  UPDATE cotacoes
     SET valor_total_centavos = (
       SELECT coalesce(sum(quantidade::bigint * preco_unitario_centavos), 0)
         FROM cotacao_itens WHERE conta_id = v_conta_id AND cotacao_id = v_cotacao_id)
   WHERE conta_id = v_conta_id AND id = v_cotacao_id;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacao_itens_totalizar AFTER INSERT OR UPDATE OR DELETE ON cotacao_itens
  FOR EACH ROW EXECUTE FUNCTION cotacao_itens_totalizar();

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
