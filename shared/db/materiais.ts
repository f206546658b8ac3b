// Materials and their colors: reads for GET /insumos/materiais (one query per page, colors built
// by json_agg) and the writes of the application's screen (operator CLI). Creating a color also
// creates its supply balance (insumo material_cor, same id), as the screen does.
import { z } from 'zod';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';

export const TIPOS_MATERIAL = ['filamento', 'resina'] as const;
export type TipoMaterial = (typeof TIPOS_MATERIAL)[number];

export const CorRow = z.object({ id: z.string(), nome: z.string(), hex: z.string(), ativa: z.boolean() });

export const MaterialRow = z.object({
  id: z.string(),
  nome: z.string(),
  tipo: z.enum(TIPOS_MATERIAL),
  cores: z.array(CorRow),
  custo_por_kg_centavos: z.number().int(),
  criado_em: z.string(),
  atualizado_em: z.string(),
  cursor_ts: z.string(),
});
export type MaterialRow = z.infer<typeof MaterialRow>;

// custo_por_kg_centavos is bigint, which would arrive as BigInt; money stays below 2^53, so a
// double carries it exactly.
export async function listarMateriais(
  db: Db,
  contaId: string,
  query: { limite: number; cursor?: Posicao; atualizado_desde?: string },
): Promise<readonly MaterialRow[]> {
  const page = pageClauses('m', 'criado_em', query);
  return db.any(sql.type(MaterialRow)`
    SELECT m.id, m.nome, m.tipo, m.custo_por_kg_centavos::float8 AS custo_por_kg_centavos, m.criado_em, m.atualizado_em, ${page.cursorColumn},
           coalesce((SELECT json_agg(json_build_object('id', c.id, 'nome', c.nome, 'hex', c.hex, 'ativa', c.ativa)
                                     ORDER BY c.criado_em, c.id)
                       FROM cores c WHERE c.conta_id = m.conta_id AND c.material_id = m.id), '[]'::json) AS cores
      FROM materiais m
     WHERE m.conta_id = ${contaId} AND ${page.where}
     ${page.orderLimit}`);
}

const Material = MaterialRow.omit({ cores: true, cursor_ts: true });
const materialColumns = sql.fragment`id, nome, tipo, custo_por_kg_centavos::float8 AS custo_por_kg_centavos, criado_em, atualizado_em`;

export async function criarMaterial(
  db: Db,
  contaId: string,
  input: { nome: string; tipo: TipoMaterial; custoPorKgCentavos?: number },
): Promise<z.infer<typeof Material>> {
  return db.one(sql.type(Material)`
    INSERT INTO materiais (conta_id, nome, tipo, custo_por_kg_centavos)
    VALUES (${contaId}, ${input.nome}, ${input.tipo}, ${input.custoPorKgCentavos ?? 0})
    RETURNING ${materialColumns}`);
}

export async function alterarMaterial(
  db: Db,
  contaId: string,
  id: string,
  change: { nome?: string; custoPorKgCentavos?: number },
): Promise<z.infer<typeof Material> | null> {
  return db.maybeOne(sql.type(Material)`
    UPDATE materiais SET
      nome = coalesce(${change.nome ?? null}, nome),
      custo_por_kg_centavos = coalesce(${change.custoPorKgCentavos ?? null}::bigint, custo_por_kg_centavos)
     WHERE conta_id = ${contaId} AND id = ${id}
    RETURNING ${materialColumns}`);
}

const Cor = CorRow.extend({ material_id: z.string() });

/** A color and its supply (unit g for filament, ml for resin), in the caller's transaction. */
export async function criarCor(
  db: Db,
  contaId: string,
  input: { materialId: string; nome: string; hex: string; saldo?: number; minimo?: number },
): Promise<z.infer<typeof Cor> | null> {
  const cor = await db.maybeOne(sql.type(Cor.extend({ material_nome: z.string(), tipo: z.enum(TIPOS_MATERIAL) }))`
    WITH nova AS (
      INSERT INTO cores (conta_id, material_id, nome, hex)
      SELECT m.conta_id, m.id, ${input.nome}, ${input.hex} FROM materiais m
       WHERE m.conta_id = ${contaId} AND m.id = ${input.materialId}
      RETURNING id, material_id, nome, hex, ativa)
    SELECT n.*, m.nome AS material_nome, m.tipo
      FROM nova n JOIN materiais m ON m.conta_id = ${contaId} AND m.id = n.material_id`);
  if (!cor) return null;
  await db.query(sql.typeAlias('void')`
    INSERT INTO insumos (conta_id, id, tipo, cor_id, nome, unidade, saldo, minimo)
    VALUES (${contaId}, ${cor.id}, 'material_cor', ${cor.id}, ${`${cor.material_nome} ${cor.nome}`},
            ${cor.tipo === 'resina' ? 'ml' : 'g'}, ${input.saldo ?? 0}, ${input.minimo ?? 0})`);
  const { material_nome: _n, tipo: _t, ...semMaterial } = cor;
  return semMaterial;
}

export async function alterarCor(
  db: Db,
  contaId: string,
  id: string,
  change: { nome?: string; hex?: string; ativa?: boolean },
): Promise<z.infer<typeof Cor> | null> {
  return db.maybeOne(sql.type(Cor)`
    UPDATE cores SET
      nome = coalesce(${change.nome ?? null}, nome),
      hex = coalesce(${change.hex ?? null}, hex),
      ativa = coalesce(${change.ativa ?? null}, ativa)
     WHERE conta_id = ${contaId} AND id = ${id}
    RETURNING id, material_id, nome, hex, ativa`);
}
