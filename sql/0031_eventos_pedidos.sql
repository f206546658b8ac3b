-- Events of production orders (contract §6.2), emitted by triggers so every writer emits them in
-- the transaction of its change. Payloads never carry the customer's name.

CREATE FUNCTION pedidos_emitir_criado() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'pedido_producao.criado', jsonb_build_object(
    'objeto', 'pedido_producao', 'id', NEW.id, 'codigo', NEW.codigo, 'tipo', NEW.tipo));
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
    'situacao_de', OLD.situacao, 'situacao_para', NEW.situacao, 'origem', origem_da_mudanca()));
  IF NEW.situacao = 'finalizado' THEN
    PERFORM emit_event(NEW.conta_id, 'pedido_producao.concluido', jsonb_build_object(
      'objeto', 'pedido_producao', 'id', NEW.id, 'codigo', NEW.codigo));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER pedidos_emitir_situacao AFTER UPDATE ON pedidos_producao
  FOR EACH ROW WHEN (OLD.situacao IS DISTINCT FROM NEW.situacao) EXECUTE FUNCTION pedidos_emitir_situacao();
