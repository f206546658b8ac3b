// Supplies (material colors, components, packaging) and their balances: GET /estoque-insumos and
// the screen's writes. Every change of a balance is recorded in insumo_movimentos; a balance that
// falls below its minimum emits estoque.baixo through the trigger of 0040.
import { z } from 'zod';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';

export const TIPOS_INSUMO = ['material_cor', 'componente', 'embalagem'] as const;
export const UNIDADES = ['g', 'ml', 'un'] as const;
export const MOTIVOS_INSUMO = ['compra', 'consumo', 'perda', 'correcao'] as const;

export const InsumoRow = z.object({
  id: z.string(),
  tipo: z.enum(TIPOS_INSUMO),
  nome: z.string(),
  unidade: z.enum(UNIDADES),
  saldo: z.number().int(),
  minimo: z.number().int(),
  abaixo_do_minimo: z.boolean(),
  criado_em: z.string(),
  atualizado_em: z.string(),
});
export type InsumoRow = z.infer<typeof InsumoRow>;

const insumoColumns = sql.fragment`i.id, i.tipo, i.nome, i.unidade, i.saldo, i.minimo, i.saldo < i.minimo AS abaixo_do_minimo,
  i.criado_em, i.atualizado_em`;

export type FiltrosInsumos = {
  limite: number;
  cursor?: Posicao;
  atualizado_desde?: string;
  abaixo_do_minimo?: boolean;
  tipo?: (typeof TIPOS_INSUMO)[number];
};

export async function listarInsumos(db: Db, contaId: string, filtros: FiltrosInsumos) {
  const page = pageClauses('i', 'criado_em', filtros);
  const conditions = [sql.fragment`i.conta_id = ${contaId}`, page.where];
  if (filtros.abaixo_do_minimo === true) conditions.push(sql.fragment`i.saldo < i.minimo`);
  if (filtros.abaixo_do_minimo === false) conditions.push(sql.fragment`i.saldo >= i.minimo`);
  if (filtros.tipo) conditions.push(sql.fragment`i.tipo = ${filtros.tipo}`);
  return db.any(sql.type(InsumoRow.extend({ cursor_ts: z.string() }))`
    SELECT ${insumoColumns}, ${page.cursorColumn}
      FROM insumos i
     WHERE ${sql.join(conditions, sql.fragment` AND `)}
     ${page.orderLimit}`);
}

/** A component or packaging (a material color's supply is made with the color: materiais.ts). */
export async function criarInsumo(
  db: Db,
  contaId: string,
  input: { tipo: 'componente' | 'embalagem'; nome: string; unidade: (typeof UNIDADES)[number]; saldo?: number; minimo?: number },
): Promise<InsumoRow> {
  return db.one(sql.type(InsumoRow)`
    INSERT INTO insumos AS i (conta_id, tipo, nome, unidade, saldo, minimo)
    VALUES (${contaId}, ${input.tipo}, ${input.nome}, ${input.unidade}, ${input.saldo ?? 0}, ${input.minimo ?? 0})
    RETURNING ${insumoColumns}`);
}

export async function alterarInsumo(
  db: Db,
  contaId: string,
  id: string,
  change: { nome?: string; minimo?: number },
): Promise<InsumoRow | null> {
  return db.maybeOne(sql.type(InsumoRow)`
    UPDATE insumos AS i SET
      nome = coalesce(${change.nome ?? null}, i.nome),
      minimo = coalesce(${change.minimo ?? null}::int, i.minimo)
     WHERE i.conta_id = ${contaId} AND i.id = ${id}
    RETURNING ${insumoColumns}`);
}

export type MovimentoInsumo =
  | { motivo: 'compra' | 'consumo' | 'perda'; quantidade: number }
  | { motivo: 'correcao'; contado: number };

export type InsumoMovido =
  | { ok: true; insumo: InsumoRow; quantidade: number }
  | { ok: false; recusa: 'nao_encontrado' | 'saldo_insuficiente'; saldo?: number };

/**
 * Moves a supply balance: a purchase adds, consumption and loss subtract (never below zero), a
 * correction sets the counted balance. The row lock serializes concurrent moves of one supply.
 */
export async function moverInsumo(db: Db, contaId: string, id: string, m: MovimentoInsumo): Promise<InsumoMovido> {
  const atual = await db.maybeOne(sql.type(z.object({ saldo: z.number().int() }))`
    SELECT saldo FROM insumos WHERE conta_id = ${contaId} AND id = ${id} FOR UPDATE`);
  if (!atual) return { ok: false, recusa: 'nao_encontrado' };
  const delta = m.motivo === 'correcao' ? m.contado - atual.saldo : m.motivo === 'compra' ? m.quantidade : -m.quantidade;
  if (atual.saldo + delta < 0) return { ok: false, recusa: 'saldo_insuficiente', saldo: atual.saldo };
  const insumo = await db.one(sql.type(InsumoRow)`
    UPDATE insumos AS i SET saldo = i.saldo + ${delta} WHERE i.conta_id = ${contaId} AND i.id = ${id}
    RETURNING ${insumoColumns}`);
  if (delta !== 0) {
    await db.query(sql.typeAlias('void')`
      INSERT INTO insumo_movimentos (conta_id, insumo_id, quantidade, saldo_depois, motivo, via)
      VALUES (${contaId}, ${id}, ${delta}, ${insumo.saldo}, ${m.motivo},
              coalesce(nullif(current_setting('app.via', true), ''), 'tela'))`);
  }
  return { ok: true, insumo, quantidade: delta };
}
