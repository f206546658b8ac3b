// Finished-part stock: balances per location (GET /estoque), movements (POST /estoque/movimentos
// and the screen) and locations. A movement is one call of estoque_movimentar
// (sql/0021_estoque_movimentar.sql): one round trip that checks, locks, moves and records.
import { z } from 'zod';
import type { Motivo } from '../errors.ts';
import { pageClauses } from './paging.ts';
import { sql, type Db } from './pool.ts';

export const TIPOS_MOVIMENTO = ['entrada', 'saida', 'ajuste'] as const;
export const MOTIVOS_MOVIMENTO = ['venda_loja', 'venda_marketplace', 'perda', 'devolucao', 'correcao', 'outro'] as const;
export const TIPOS_LOCAL = ['proprio', 'consignado'] as const;

export const SaldoRow = z.object({
  id: z.string(),
  variacao_id: z.string(),
  produto_id: z.string(),
  parte_id: z.string().nullable(),
  local_id: z.string(),
  local_tipo: z.enum(TIPOS_LOCAL),
  saldo: z.number().int(),
  criado_em: z.string(),
  atualizado_em: z.string(),
  cursor_ts: z.string(),
});
export type SaldoRow = z.infer<typeof SaldoRow>;

export type FiltrosSaldos = {
  limite: number;
  cursor?: string;
  atualizado_desde?: string;
  variacao_id?: string;
  produto_id?: string;
  local_id?: string;
};

export async function listarSaldos(db: Db, contaId: string, filtros: FiltrosSaldos): Promise<readonly SaldoRow[]> {
  const page = pageClauses('s', 'criado_em', filtros);
  const conditions = [sql.fragment`s.conta_id = ${contaId}`, page.where];
  if (filtros.variacao_id) conditions.push(sql.fragment`s.variacao_id = ${filtros.variacao_id}`);
  if (filtros.produto_id) conditions.push(sql.fragment`s.produto_id = ${filtros.produto_id}`);
  if (filtros.local_id) conditions.push(sql.fragment`s.local_id = ${filtros.local_id}`);
  return db.any(sql.type(SaldoRow)`
    SELECT s.id, s.variacao_id, s.produto_id, s.parte_id, s.local_id, l.tipo AS local_tipo, s.saldo,
           s.criado_em, s.atualizado_em, ${page.cursorColumn}
      FROM estoque_saldos s
      JOIN locais l ON l.conta_id = s.conta_id AND l.id = s.local_id
     WHERE ${sql.join(conditions, sql.fragment` AND `)}
     ${page.orderLimit}`);
}

export const MovimentoRow = z.object({
  id: z.string(),
  tipo: z.enum(TIPOS_MOVIMENTO),
  variacao_id: z.string(),
  parte_id: z.string().nullable(),
  local_id: z.string(),
  quantidade: z.number().int(),
  saldo_antes: z.number().int(),
  saldo_depois: z.number().int(),
  motivo: z.enum(MOTIVOS_MOVIMENTO),
  observacao: z.string().nullable(),
  criado_em: z.string(),
});
export type MovimentoRow = z.infer<typeof MovimentoRow>;

export type NovoMovimento = {
  tipo: (typeof TIPOS_MOVIMENTO)[number];
  variacao_id: string;
  parte_id?: string;
  quantidade?: number;
  contado?: number;
  motivo: (typeof MOTIVOS_MOVIMENTO)[number];
  observacao?: string;
};

const Resultado = z.object({
  recusa: z.enum(['referencia_invalida', 'abaixo_do_minimo', 'fora_do_multiplo', 'saldo_insuficiente']).nullable(),
  limite: z.number().int().nullable(),
  id: z.string().nullable(),
  tipo: z.enum(TIPOS_MOVIMENTO).nullable(),
  variacao_id: z.string().nullable(),
  parte_id: z.string().nullable(),
  local_id: z.string().nullable(),
  quantidade: z.number().int().nullable(),
  saldo_antes: z.number().int().nullable(),
  saldo_depois: z.number().int().nullable(),
  motivo: z.enum(MOTIVOS_MOVIMENTO).nullable(),
  observacao: z.string().nullable(),
  criado_em: z.string().nullable(),
});

export type Movimentado =
  | { ok: true; movimento: MovimentoRow }
  | { ok: false; recusa: Extract<Motivo, 'referencia_invalida' | 'abaixo_do_minimo' | 'fora_do_multiplo' | 'saldo_insuficiente'>; limite: number | null };

/**
 * Posts a movement in the caller's transaction. localId is for the screen (consignment); the API
 * passes none and moves the account's own location.
 */
export async function movimentar(db: Db, contaId: string, m: NovoMovimento, localId: string | null = null): Promise<Movimentado> {
  const r = await db.one(sql.type(Resultado)`
    SELECT * FROM estoque_movimentar(${contaId}, ${m.tipo}, ${m.variacao_id}, ${m.parte_id ?? null},
      ${m.quantidade ?? null}, ${m.contado ?? null}, ${m.motivo}, ${m.observacao ?? null}, ${localId})`);
  if (r.recusa) return { ok: false, recusa: r.recusa, limite: r.limite };
  return { ok: true, movimento: MovimentoRow.parse(r) };
}

const MovimentoApi = z.object({
  claim: z.enum(['new', 'running', 'conflito', 'done']),
  status_code: z.number().nullable(),
  codigo: z.string().nullable(),
  motivo: z.string().nullable(),
  recusa: Resultado.shape.recusa,
  limite: z.number().int().nullable(),
  // json: its timestamp arrives as PostgreSQL wrote it, normalized like every other (pool.ts).
  movimento: MovimentoRow.extend({ criado_em: z.string().transform((v) => new Date(v).toISOString()) }).nullable(),
});
export type MovimentoApi = z.infer<typeof MovimentoApi>;

/**
 * POST /estoque/movimentos in one statement (api_estoque_movimentar): the Idempotency-Key claimed,
 * the movement made or refused, and the key's record kept, in one round trip.
 */
export async function movimentarPelaApi(
  db: Db,
  origem: { contaId: string; chaveId: string },
  chave: { key: string; route: string; hash: Buffer } | null,
  m: NovoMovimento,
): Promise<MovimentoApi> {
  return db.one(sql.prepared('api_estoque_movimentar', MovimentoApi)`
    SELECT * FROM api_estoque_movimentar(${origem.contaId}, ${origem.chaveId}, ${chave?.key ?? null}, ${chave?.route ?? null},
      ${chave ? sql.binary(chave.hash) : null}, ${m.tipo}, ${m.variacao_id}, ${m.parte_id ?? null}, ${m.quantidade ?? null},
      ${m.contado ?? null}, ${m.motivo}, ${m.observacao ?? null})`);
}

export async function lerMovimento(db: Db, contaId: string, id: string): Promise<MovimentoRow | null> {
  return db.maybeOne(sql.type(MovimentoRow)`
    SELECT id, tipo, variacao_id, parte_id, local_id, quantidade, saldo_antes, saldo_depois, motivo, observacao, criado_em
      FROM estoque_movimentos WHERE conta_id = ${contaId} AND id = ${id}`);
}

export const LocalRow = z.object({ id: z.string(), nome: z.string(), tipo: z.enum(TIPOS_LOCAL), criado_em: z.string() });

export async function listarLocais(db: Db, contaId: string): Promise<readonly z.infer<typeof LocalRow>[]> {
  return db.any(sql.type(LocalRow)`
    SELECT id, nome, tipo, criado_em FROM locais WHERE conta_id = ${contaId} ORDER BY criado_em, id`);
}

/** A consignment location (each account has exactly one own location, made with the account). */
export async function criarLocalConsignado(db: Db, contaId: string, nome: string): Promise<z.infer<typeof LocalRow>> {
  return db.one(sql.type(LocalRow)`
    INSERT INTO locais (conta_id, nome, tipo) VALUES (${contaId}, ${nome}, 'consignado')
    RETURNING id, nome, tipo, criado_em`);
}
