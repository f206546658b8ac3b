-- Production orders: sequential codes, their state machines (order, item, payment;
-- sql/code/common.sql) enforced for every writer, the version of an order moved by any change of
-- its items or of the stage they are at, and the events of production orders (contract §6.2),
-- emitted by triggers so every writer emits them in the transaction of its change. Payloads never
-- carry the customer's name; they carry the order's external references (referencia_externa,
-- metadados).

CREATE TRIGGER pedidos_numerar BEFORE INSERT ON pedidos_producao FOR EACH ROW EXECUTE FUNCTION numerar('pedido');

-- Every order starts as aberto and reaches later states only through the transitions of
-- transicao_permitida (common.sql), so finalizado_em and the events always agree with the state.
CREATE FUNCTION pedidos_transicao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM exigir_transicao('pedido', 'novo', NEW.situacao);
    RETURN NEW;
  END IF;
  PERFORM exigir_transicao('pedido', OLD.situacao, NEW.situacao);
  PERFORM exigir_transicao('pagamento', OLD.pagamento_situacao, NEW.pagamento_situacao);
  IF NEW.situacao = 'finalizado' AND OLD.situacao <> 'finalizado' THEN
    NEW.finalizado_em := now();
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER pedidos_transicao BEFORE INSERT OR UPDATE ON pedidos_producao
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
  FOR EACH ROW EXECUTE FUNCTION touch_versioned_row();

CREATE FUNCTION pedido_itens_transicao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM exigir_transicao('item', OLD.situacao, NEW.situacao);
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

CREATE FUNCTION pedidos_emitir_criado() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'pedido_producao.criado', jsonb_build_object(
    'objeto', 'pedido_producao', 'id', NEW.id, 'codigo', NEW.codigo, 'tipo', NEW.tipo)
    || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  RETURN NULL;
END $$;
CREATE TRIGGER pedidos_emitir_criado AFTER INSERT ON pedidos_producao
  FOR EACH ROW EXECUTE FUNCTION pedidos_emitir_criado();

-- Rule 2: situacao_de and situacao_para; origem as in cotacao.status_mudou, so a receiver can tell
-- its own changes from the workshop's. Reaching finalizado also emits pedido_producao.concluido.
CREATE FUNCTION pedidos_emitir_situacao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'pedido_producao.situacao_mudou', jsonb_build_object(
    'objeto', 'pedido_producao', 'id', NEW.id, 'codigo', NEW.codigo,
    'situacao_de', OLD.situacao, 'situacao_para', NEW.situacao, 'origem', origem_da_mudanca())
    || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  IF NEW.situacao = 'finalizado' THEN
    PERFORM emit_event(NEW.conta_id, 'pedido_producao.concluido', jsonb_build_object(
      'objeto', 'pedido_producao', 'id', NEW.id, 'codigo', NEW.codigo)
      || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER pedidos_emitir_situacao AFTER UPDATE ON pedidos_producao
  FOR EACH ROW WHEN (OLD.situacao IS DISTINCT FROM NEW.situacao) EXECUTE FUNCTION pedidos_emitir_situacao();

-- The representation of a production order (contract §2.1) as the API sends it, compact and in the
-- order of its fields, and its version (its ETag's): the one definition every read of an order uses,
-- alone (admission reads it with the request: sql/code/representacoes.sql), in a list, and after it
-- is created. valor_centavos is cost data: only on customer orders with a value, and only for a
-- caller whose key's creator holds custos.ver; absent otherwise, never null.
CREATE FUNCTION pedido_representacao(p_conta_id uuid, p_id uuid, p_permissoes text[])
RETURNS TABLE (versao bigint, corpo text)
LANGUAGE sql STABLE AS $$
  SELECT p.row_version,
         '{"id":"' || p.id || '","codigo":' || to_json(p.codigo) || ',"tipo":"' || p.tipo || '","origem":"' || p.origem
         || '","cotacao_id":' || coalesce('"' || p.cotacao_id || '"', 'null')
         || ',"cliente_nome":' || coalesce(to_json(p.cliente_nome)::text, 'null')
         || ',"prazo":' || coalesce('"' || p.prazo || '"', 'null')
         || ',"prioridade":"' || p.prioridade || '","situacao":"' || p.situacao
         || '","pagamento_situacao":' || coalesce('"' || p.pagamento_situacao || '"', 'null')
         || ',"itens":[' || coalesce(
              (SELECT string_agg('{"id":"' || i.id || '","tipo":"' || i.tipo
                                 || '","produto_id":' || coalesce('"' || i.produto_id || '"', 'null')
                                 || ',"variacao_id":' || coalesce('"' || i.variacao_id || '"', 'null')
                                 || ',"nome":' || to_json(i.nome) || ',"quantidade":' || i.quantidade
                                 || ',"situacao":"' || i.situacao || '","etapa":'
                                 || coalesce((SELECT to_json(e.nome)::text FROM etapas e WHERE e.conta_id = i.conta_id AND e.id = i.etapa_id), 'null')
                                 || '}', ',' ORDER BY i.posicao)
                 FROM pedido_itens i
                WHERE i.conta_id = p.conta_id AND i.pedido_id = p.id), '')
         || '],"criado_em":"' || instante(p.criado_em) || '","atualizado_em":"' || instante(p.atualizado_em)
         || '","finalizado_em":' || coalesce('"' || instante(p.finalizado_em) || '"', 'null')
         || ',"referencia_externa":' || coalesce(to_json(p.referencia_externa)::text, 'null')
         || ',"metadados":' || p.metadados
         || CASE WHEN p.tipo = 'cliente' AND p.valor_centavos IS NOT NULL AND 'custos.ver' = ANY (p_permissoes)
                 THEN ',"valor_centavos":' || p.valor_centavos ELSE '' END
         || '}'
    FROM pedidos_producao p
   WHERE p.conta_id = p_conta_id AND p.id = p_id
$$;
