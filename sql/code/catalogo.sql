-- The catalog: rows kept current, a change below a product (variation, part, price tier) or a color
-- of a material counted as a change of its product or material, and the catalog's events
-- (produto.criado, produto.atualizado, catalogo.atualizado_em_massa) decided at commit.

CREATE TRIGGER canais_touch BEFORE UPDATE ON canais FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER produtos_touch BEFORE UPDATE ON produtos FOR EACH ROW EXECUTE FUNCTION touch_versioned_row();
CREATE TRIGGER variacoes_touch BEFORE UPDATE ON variacoes FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER materiais_touch BEFORE UPDATE ON materiais FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER cores_touch BEFORE UPDATE ON cores FOR EACH ROW EXECUTE FUNCTION touch_row();

-- A catalog change below a product (variation, part, price tier) is a change of the product.
CREATE FUNCTION variacoes_tocar_produto() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE produtos SET atualizado_em = now()
   WHERE conta_id = coalesce(NEW.conta_id, OLD.conta_id) AND id = coalesce(NEW.produto_id, OLD.produto_id);
  RETURN NULL;
END $$;
CREATE TRIGGER variacoes_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON variacoes
  FOR EACH ROW EXECUTE FUNCTION variacoes_tocar_produto();

-- Parts and price tiers: the product of their variation.
CREATE FUNCTION catalogo_tocar_produto() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE produtos p SET atualizado_em = now()
    FROM variacoes v
   WHERE v.conta_id = coalesce(NEW.conta_id, OLD.conta_id) AND v.id = coalesce(NEW.variacao_id, OLD.variacao_id)
     AND p.conta_id = v.conta_id AND p.id = v.produto_id;
  RETURN NULL;
END $$;
CREATE TRIGGER partes_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON partes
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();
CREATE TRIGGER precos_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON precos
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();

-- A color belongs to its material's representation (cores[]): changing it changes the material.
CREATE FUNCTION cores_tocar_material() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE materiais SET atualizado_em = now()
   WHERE conta_id = coalesce(NEW.conta_id, OLD.conta_id)
     AND id = coalesce(NEW.material_id, OLD.material_id);
  RETURN NULL;
END $$;
CREATE TRIGGER cores_tocar_material AFTER INSERT OR UPDATE OR DELETE ON cores
  FOR EACH ROW EXECUTE FUNCTION cores_tocar_material();

-- A change below a product (variation, part, price tier) already updates its product
-- (variacoes_tocar_produto, catalogo_tocar_produto), so product rows are the only ones to watch.
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
