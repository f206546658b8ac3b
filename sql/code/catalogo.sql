-- The catalog: rows kept current, a change below a product (variation, part, price tier) or a color
-- of a material counted as a change of its product or material, each product's document (what the
-- API shows of it) rebuilt with its row, and the catalog's events (produto.criado,
-- produto.atualizado, catalogo.atualizado_em_massa) decided at commit.

CREATE TRIGGER canais_touch BEFORE UPDATE ON canais FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER variacoes_touch BEFORE UPDATE ON variacoes FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER materiais_touch BEFORE UPDATE ON materiais FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER cores_touch BEFORE UPDATE ON cores FOR EACH ROW EXECUTE FUNCTION touch_row();

-- A product's document: the JSON text GET /produtos and GET /produtos/{id} send, built from the
-- product's row as it is being written and its variations, parts and price tiers as they are now
-- (docs/decisions/0028-catalog-documents.md). Compact and in the representation's key order, byte for
-- byte what JSON.stringify made of the rows the API used to build per request; timestamps as
-- toISOString() prints them (UTC, milliseconds). Variations and parts in the screen's order, channels
-- oldest first, tiers by the quantity they start at. sql/migrations/0012_documentos_catalogo.sql
-- backfilled the rows with a copy of this builder.
CREATE FUNCTION produto_documento(p produtos) RETURNS text
LANGUAGE plpgsql STABLE AS $$
DECLARE
  v_variacoes text;
BEGIN
  SELECT string_agg(
           '{"id":' || to_json(v.id) || ',"sku":' || to_json(v.sku) || ',"nome":' || to_json(v.nome)
           || ',"ativa":' || v.ativa || ',"quantidade_minima":' || v.quantidade_minima || ',"multiplo":' || v.multiplo
           || ',"partes":[' || coalesce(pt.partes, '') || '],"precos":[' || coalesce(pr.precos, '') || ']}',
           ',' ORDER BY v.posicao, v.criado_em, v.id)
    INTO v_variacoes
    FROM variacoes v
    LEFT JOIN LATERAL (
      SELECT string_agg('{"id":' || to_json(x.id) || ',"nome":' || to_json(x.nome) || ',"quantidade":' || x.quantidade || '}',
                        ',' ORDER BY x.posicao, x.id) AS partes
        FROM partes x
       WHERE x.conta_id = v.conta_id AND x.variacao_id = v.id) pt ON true
    LEFT JOIN LATERAL (
      SELECT string_agg('{"canal_id":' || to_json(c.id) || ',"faixas":[' || f.faixas || ']}', ',' ORDER BY c.criado_em, c.id) AS precos
        FROM (SELECT t.canal_id,
                     string_agg('{"a_partir_de":' || t.a_partir_de || ',"preco_centavos":' || t.preco_centavos || '}',
                                ',' ORDER BY t.a_partir_de) AS faixas
                FROM precos t
               WHERE t.conta_id = v.conta_id AND t.variacao_id = v.id
               GROUP BY t.canal_id) f
        JOIN canais c ON c.conta_id = v.conta_id AND c.id = f.canal_id) pr ON true
   WHERE v.conta_id = p.conta_id AND v.produto_id = p.id;
  RETURN '{"id":' || to_json(p.id) || ',"sku":' || to_json(p.sku) || ',"nome":' || to_json(p.nome)
    || ',"descricao":' || coalesce(to_json(p.descricao)::text, 'null') || ',"ativo":' || p.ativo
    || ',"variacoes":[' || coalesce(v_variacoes, '') || ']'
    || ',"criado_em":"' || to_char(p.criado_em AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
    || '","atualizado_em":"' || to_char(p.atualizado_em AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') || '"}';
END $$;

-- Every write of a product row: an update moves atualizado_em and the version (the source of
-- ETags), and either rebuilds the document. One trigger, so the document is built after the touch,
-- and whatever a writer puts in documento is replaced.
CREATE FUNCTION produtos_documentar() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'UPDATE' THEN
    NEW.atualizado_em := now();
    NEW.row_version := OLD.row_version + 1;
  END IF;
  NEW.documento := produto_documento(NEW);
  RETURN NEW;
END $$;
CREATE TRIGGER produtos_documentar BEFORE INSERT OR UPDATE ON produtos
  FOR EACH ROW EXECUTE FUNCTION produtos_documentar();

-- A catalog change below a product (variation, part, price tier) is a change of the product, and so
-- rebuilds its document. A row moved to another parent changes both.
CREATE FUNCTION variacoes_tocar_produto() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE produtos SET atualizado_em = now()
   WHERE conta_id = coalesce(NEW.conta_id, OLD.conta_id) AND id IN (NEW.produto_id, OLD.produto_id);
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
   WHERE v.conta_id = coalesce(NEW.conta_id, OLD.conta_id) AND v.id IN (NEW.variacao_id, OLD.variacao_id)
     AND p.conta_id = v.conta_id AND p.id = v.produto_id;
  RETURN NULL;
END $$;
CREATE TRIGGER partes_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON partes
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();
CREATE TRIGGER precos_tocar_produto AFTER INSERT OR UPDATE OR DELETE ON precos
  FOR EACH ROW EXECUTE FUNCTION catalogo_tocar_produto();

-- Documents list a variation's prices by channel, oldest channel first: moving a channel's criado_em
-- reorders the documents of the products it prices.
CREATE FUNCTION canais_reordenar_produtos() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  UPDATE produtos p SET atualizado_em = now()
   WHERE p.conta_id = NEW.conta_id
     AND p.id IN (SELECT v.produto_id
                    FROM precos t JOIN variacoes v ON v.conta_id = t.conta_id AND v.id = t.variacao_id
                   WHERE t.conta_id = NEW.conta_id AND t.canal_id = NEW.id);
  RETURN NULL;
END $$;
CREATE TRIGGER canais_reordenar_produtos AFTER UPDATE OF criado_em ON canais
  FOR EACH ROW WHEN (OLD.criado_em IS DISTINCT FROM NEW.criado_em) EXECUTE FUNCTION canais_reordenar_produtos();

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

-- produto.criado's and produto.atualizado's data (the latter grouped: evento_agrupado_atual).
CREATE FUNCTION produto_evento_dados(p_id uuid, p_sku text) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('objeto', 'produto', 'id', p_id, 'sku', p_sku)
$$;

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
  -- 20 is PRODUTOS_ATE_EVENTOS_POR_PRODUTO of shared/domain/eventos.ts, the number the event
  -- catalog's descriptions state.
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
      produto_evento_dados(r.id, r.sku));
  END LOOP;
  RETURN NULL;
END $$;
CREATE CONSTRAINT TRIGGER catalogo_emitir_eventos AFTER INSERT ON catalogo_mudancas
  DEFERRABLE INITIALLY DEFERRED
  FOR EACH ROW EXECUTE FUNCTION catalogo_emitir_eventos();
