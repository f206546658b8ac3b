-- Events of quotations and of their customer link (contract §6.2), emitted by triggers so every
-- writer emits them in the transaction of its change: the API, the operator CLI standing in for
-- the screen, the customer link, the expiry routine, or a plain SQL write by the application.
-- Payloads never carry the customer's name or e-mail (they outlive an anonymization).

CREATE FUNCTION cotacoes_emitir_criada() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'cotacao.criada', jsonb_build_object(
    'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo, 'status', NEW.status));
  RETURN NULL;
END $$;
CREATE TRIGGER cotacoes_emitir_criada AFTER INSERT ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION cotacoes_emitir_criada();

-- Every status change emits cotacao.status_mudou (rule 1: origem says who made it), followed by
-- the event of the state reached, when it has one.
CREATE FUNCTION cotacoes_emitir_status() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'cotacao.status_mudou', jsonb_build_object(
    'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo, 'de', OLD.status, 'para', NEW.status,
    'versao', NEW.versao, 'origem', origem_da_mudanca()));
  IF NEW.status = 'enviada' THEN
    PERFORM emit_event(NEW.conta_id, 'cotacao.enviada', jsonb_build_object(
      'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo, 'versao', NEW.versao));
  ELSIF NEW.status = 'aprovada' THEN
    PERFORM emit_event(NEW.conta_id, 'cotacao.aprovada', jsonb_build_object(
      'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo));
  ELSIF NEW.status = 'recusada' THEN
    PERFORM emit_event(NEW.conta_id, 'cotacao.recusada', jsonb_build_object(
      'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacoes_emitir_status AFTER UPDATE ON cotacoes
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION cotacoes_emitir_status();

-- The customer opening the link is the counter link_aberturas growing: one link.aberto per
-- opening, numbered. Nothing about the opener (IP, browser) is stored or sent.
CREATE FUNCTION cotacoes_emitir_link_aberto() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_n int;
BEGIN
  FOR v_n IN OLD.link_aberturas + 1 .. NEW.link_aberturas LOOP
    PERFORM emit_event(NEW.conta_id, 'link.aberto', jsonb_build_object(
      'objeto', 'link', 'cotacao_id', NEW.id, 'codigo', NEW.codigo, 'abertura_n', v_n));
  END LOOP;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacoes_emitir_link_aberto AFTER UPDATE ON cotacoes
  FOR EACH ROW WHEN (NEW.link_aberturas > OLD.link_aberturas) EXECUTE FUNCTION cotacoes_emitir_link_aberto();

-- A close-deal request is accepted only on a sent quotation, and is about the version the customer
-- is looking at. The quotation is locked so a revision cannot slip in between.
CREATE FUNCTION cotacao_fechamentos_validar() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_status text;
  v_versao int;
BEGIN
  SELECT status, versao INTO v_status, v_versao FROM cotacoes
   WHERE conta_id = NEW.conta_id AND id = NEW.cotacao_id
     FOR SHARE;
  IF FOUND AND v_status <> 'enviada' THEN
    RAISE EXCEPTION 'quotation % is %: only a sent quotation can be closed by the customer', NEW.cotacao_id, v_status
      USING ERRCODE = 'check_violation', CONSTRAINT = 'cotacao_nao_enviada';
  END IF;
  NEW.versao := coalesce(v_versao, NEW.versao);
  RETURN NEW;
END $$;
CREATE TRIGGER cotacao_fechamentos_validar BEFORE INSERT ON cotacao_fechamentos
  FOR EACH ROW EXECUTE FUNCTION cotacao_fechamentos_validar();

CREATE FUNCTION cotacao_fechamentos_emitir() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'cotacao.fechamento_pedido', jsonb_build_object(
    'objeto', 'cotacao', 'id', c.id, 'codigo', c.codigo, 'cor_a_combinar', NEW.cor_a_combinar, 'versao', NEW.versao))
     FROM cotacoes c WHERE c.conta_id = NEW.conta_id AND c.id = NEW.cotacao_id;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacao_fechamentos_emitir AFTER INSERT ON cotacao_fechamentos
  FOR EACH ROW EXECUTE FUNCTION cotacao_fechamentos_emitir();
