-- Quotations: sequential codes, their state machine (sql/code/common.sql) and the frozen items of a
-- sent quotation, enforced for every writer; the total kept from the items; and the events of
-- quotations and of their customer link (contract §6.2), emitted by triggers so every writer emits
-- them in the transaction of its change: the API, the operator CLI standing in for the screen, the
-- customer link, the expiry routine, or a plain SQL write by the application. Payloads never carry
-- the customer's name or e-mail (they outlive an anonymization); they carry the quotation's
-- external references (referencia_externa, metadados), which the integrator wrote.

CREATE TRIGGER cotacoes_numerar BEFORE INSERT ON cotacoes FOR EACH ROW EXECUTE FUNCTION numerar('cotacao');

-- Every quotation starts as a draft (contract §3) and reaches later states only through the
-- transitions of transicao_permitida (common.sql), so versao, enviada_em and the events always
-- agree with the state.
CREATE FUNCTION cotacoes_transicao() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    PERFORM exigir_transicao('cotacao', 'nova', NEW.status);
    RETURN NEW;
  END IF;
  PERFORM exigir_transicao('cotacao', OLD.status, NEW.status);
  -- Sending again after a revision is a new version of the quotation.
  IF NEW.status = 'enviada' AND OLD.status <> 'enviada' THEN
    IF OLD.enviada_em IS NOT NULL THEN
      NEW.versao := OLD.versao + 1;
    END IF;
    NEW.enviada_em := now();
  END IF;
  IF NEW.link_aberturas < OLD.link_aberturas THEN
    RAISE EXCEPTION 'the openings of a quotation link only grow'
      USING ERRCODE = 'check_violation', CONSTRAINT = 'link_aberturas_decrescente';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER cotacoes_transicao BEFORE INSERT OR UPDATE ON cotacoes
  FOR EACH ROW EXECUTE FUNCTION cotacoes_transicao();

-- Like touch_versioned_row(), except that the customer opening the link (only link_aberturas
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

CREATE FUNCTION cotacoes_emitir_criada() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'cotacao.criada', jsonb_build_object(
    'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo, 'status', NEW.status)
    || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
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
    'versao', NEW.versao, 'origem', origem_da_mudanca()) || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  IF NEW.status = 'enviada' THEN
    PERFORM emit_event(NEW.conta_id, 'cotacao.enviada', jsonb_build_object(
      'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo, 'versao', NEW.versao)
      || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  ELSIF NEW.status = 'aprovada' THEN
    PERFORM emit_event(NEW.conta_id, 'cotacao.aprovada', jsonb_build_object(
      'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo) || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  ELSIF NEW.status = 'recusada' THEN
    PERFORM emit_event(NEW.conta_id, 'cotacao.recusada', jsonb_build_object(
      'objeto', 'cotacao', 'id', NEW.id, 'codigo', NEW.codigo) || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacoes_emitir_status AFTER UPDATE ON cotacoes
  FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status) EXECUTE FUNCTION cotacoes_emitir_status();

-- The customer opening the link is the counter link_aberturas growing: one link.aberto per
-- opening, numbered. Nothing about the opener (IP, browser) is stored or sent.
CREATE FUNCTION cotacoes_emitir_link_aberto() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  FOR v_n IN OLD.link_aberturas + 1 .. NEW.link_aberturas LOOP
    PERFORM emit_event(NEW.conta_id, 'link.aberto', jsonb_build_object(
      'objeto', 'link', 'cotacao_id', NEW.id, 'codigo', NEW.codigo, 'abertura_n', v_n)
      || referencias_do_registro(NEW.referencia_externa, NEW.metadados));
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
    'objeto', 'cotacao', 'id', c.id, 'codigo', c.codigo, 'cor_a_combinar', NEW.cor_a_combinar, 'versao', NEW.versao)
    || referencias_do_registro(c.referencia_externa, c.metadados))
     FROM cotacoes c WHERE c.conta_id = NEW.conta_id AND c.id = NEW.cotacao_id;
  RETURN NULL;
END $$;
CREATE TRIGGER cotacao_fechamentos_emitir AFTER INSERT ON cotacao_fechamentos
  FOR EACH ROW EXECUTE FUNCTION cotacao_fechamentos_emitir();
