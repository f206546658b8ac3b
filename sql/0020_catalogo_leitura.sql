-- Reads of the catalog and stock through the API (DESIGN §8-9): indexes for the default order of
-- each list (criado_em, id) so a page is an index range scan, and materials whose atualizado_em
-- moves when one of their colors changes (atualizado_desde then finds them).

CREATE INDEX canais_criado ON canais (conta_id, criado_em, id);
CREATE INDEX produtos_criado ON produtos (conta_id, criado_em, id);
CREATE INDEX materiais_criado ON materiais (conta_id, criado_em, id);
CREATE INDEX estoque_saldos_criado ON estoque_saldos (conta_id, criado_em, id);
CREATE INDEX insumos_criado ON insumos (conta_id, criado_em, id);
-- Filters of GET /estoque by location.
CREATE INDEX estoque_saldos_local ON estoque_saldos (conta_id, local_id);

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
