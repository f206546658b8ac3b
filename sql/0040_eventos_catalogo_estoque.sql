-- Events of the catalog and stock (contract §6.2), emitted by triggers so every writer emits them:
-- produto.criado, produto.atualizado, catalogo.atualizado_em_massa, estoque.movimentado and
-- estoque.baixo. Quotation, link and production-order events are emitted by their own migrations.

-- Products changed by the running transaction, collected by row triggers and turned into events
-- once, at commit, by a deferred trigger: only then is it known whether the transaction changed
-- more than 20 products (one catalogo.atualizado_em_massa instead of per-product events).
-- Rows live only inside their transaction.
CREATE TABLE catalogo_mudancas (
  conta_id uuid NOT NULL REFERENCES contas (id),
  transacao xid8 NOT NULL DEFAULT pg_current_xact_id(),
  produto_id uuid NOT NULL,
  -- The product was created by this transaction (produto.criado rather than produto.atualizado).
  criado boolean NOT NULL,
  PRIMARY KEY (conta_id, transacao, produto_id),
  FOREIGN KEY (conta_id, produto_id) REFERENCES produtos (conta_id, id) ON DELETE CASCADE
);

-- A change below a product (variation, part, price tier) already updates its product
-- (0005_regras.sql), so product rows are the only ones to watch.
CREATE FUNCTION produtos_registrar_mudanca() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO catalogo_mudancas (conta_id, produto_id, criado)
  VALUES (NEW.conta_id, NEW.id, TG_OP = 'INSERT')
  ON CONFLICT DO NOTHING;
  RETURN NULL;
END $$;
CREATE TRIGGER produtos_registrar_mudanca AFTER INSERT OR UPDATE ON produtos
  FOR EACH ROW EXECUTE FUNCTION produtos_registrar_mudanca();

-- Fires at commit once per collected row; the first firing of a transaction emits everything for
-- its account and removes the rows, so the later ones find nothing.
CREATE FUNCTION catalogo_emitir_eventos() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_ids uuid[];
  v_criados boolean[];
  r record;
BEGIN
  WITH feitas AS (
    DELETE FROM catalogo_mudancas
     WHERE conta_id = NEW.conta_id AND transacao = NEW.transacao
    RETURNING produto_id, criado)
  SELECT array_agg(produto_id), array_agg(criado) INTO v_ids, v_criados FROM feitas;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  IF cardinality(v_ids) > 20 THEN
    -- Every product of the transaction has atualizado_em = now(), so atualizado_desde = desde
    -- finds them all; milliseconds are floored so desde never falls after them.
    PERFORM emit_event(NEW.conta_id, 'catalogo.atualizado_em_massa', jsonb_build_object(
      'objeto', 'catalogo',
      'quantidade', cardinality(v_ids),
      'desde', to_char(date_trunc('milliseconds', now()) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')));
    RETURN NULL;
  END IF;
  FOR r IN
    SELECT p.id, p.sku, x.criado
      FROM unnest(v_ids, v_criados) WITH ORDINALITY AS x (produto_id, criado, n)
      JOIN produtos p ON p.conta_id = NEW.conta_id AND p.id = x.produto_id
     ORDER BY x.n
  LOOP
    PERFORM emit_event(NEW.conta_id,
      CASE WHEN r.criado THEN 'produto.criado' ELSE 'produto.atualizado' END,
      jsonb_build_object('objeto', 'produto', 'id', r.id, 'sku', r.sku));
  END LOOP;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER catalogo_emitir_eventos AFTER INSERT ON catalogo_mudancas
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION catalogo_emitir_eventos();

-- estoque.movimentado: grouped per variation by emit_event; the event carries the latest movement.
CREATE FUNCTION estoque_movimentos_emitir() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM emit_event(NEW.conta_id, 'estoque.movimentado', jsonb_build_object(
    'objeto', 'estoque', 'variacao_id', NEW.variacao_id, 'local_id', NEW.local_id, 'tipo', NEW.tipo));
  RETURN NULL;
END $$;
CREATE TRIGGER estoque_movimentos_emitir AFTER INSERT ON estoque_movimentos
  FOR EACH ROW EXECUTE FUNCTION estoque_movimentos_emitir();

-- estoque.baixo: the last warning per supply. A new warning goes out only when the last one was on
-- an earlier calendar day in the account's time zone; the upsert's row lock makes two concurrent
-- transactions agree on which of them warns.
CREATE TABLE insumo_avisos (
  conta_id uuid NOT NULL,
  insumo_id uuid NOT NULL,
  avisado_em timestamptz NOT NULL,
  PRIMARY KEY (conta_id, insumo_id),
  FOREIGN KEY (conta_id, insumo_id) REFERENCES insumos (conta_id, id) ON DELETE CASCADE
);

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
