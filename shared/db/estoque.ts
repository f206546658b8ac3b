// Finished-part stock: balances per location (GET /estoque), movements (POST /estoque/movimentos
// and the screen) and locations. A movement is one call of estoque_movimentar
// (sql/0021_estoque_movimentar.sql): one round trip that checks, locks, moves and records.
import { z } from 'zod';
import type { Motivo } from '../errors.ts';
import { pageClauses } from './paging.ts';
import type { FragmentSqlToken } from 'slonik';
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

// A movement's answer from api_estoque_movimentar_lote: how its Idempotency-Key was claimed and the
// movement made or refused ({"claim":"running"} alone for a key repeated within one batch).
const nulo = <T extends z.ZodType>(type: T) => type.nullable().default(null);
export const MovimentoApi = z.object({
  claim: z.enum(['new', 'running', 'conflito', 'done']),
  status_code: nulo(z.number()),
  codigo: nulo(z.string()),
  motivo: nulo(z.string()),
  recusa: nulo(z.enum(['referencia_invalida', 'abaixo_do_minimo', 'fora_do_multiplo', 'saldo_insuficiente'])),
  limite: nulo(z.number().int()),
  // json: its timestamp arrives as PostgreSQL wrote it, normalized like every other (pool.ts).
  movimento: nulo(MovimentoRow.extend({ criado_em: z.string().transform((v) => new Date(v).toISOString()) })),
});
export type MovimentoApi = z.infer<typeof MovimentoApi>;
/** A movement of the batch that failed in its own subtransaction (the others went on). */
const Falha = z.object({ erro: z.string(), mensagem: z.string() });

/** A movement posted through the API: who makes it, with its Idempotency-Key (null: none). */
export type MovimentoPedido = NovoMovimento & {
  contaId: string;
  chaveId: string;
  chave: { key: string; route: string; hash: Buffer } | null;
};

/**
 * POST /estoque/movimentos for a batch of admitted requests (api_estoque_movimentar_lote): each
 * claims its Idempotency-Key, moves the balance or is refused, and keeps its key's record, in one
 * round trip and one commit.
 */
export function movimentosEmLote(pedidos: readonly MovimentoPedido[]): FragmentSqlToken {
  const col = <T>(pick: (p: MovimentoPedido) => T) => pedidos.map(pick);
  return sql.fragment`api_estoque_movimentar_lote(
    ${sql.array(col((p) => p.contaId), 'uuid')}, ${sql.array(col((p) => p.chaveId), 'uuid')},
    ${sql.array(col((p) => p.chave?.key ?? null), 'text')}, ${sql.array(col((p) => p.chave?.route ?? null), 'text')},
    ${sql.array(col((p) => (p.chave ? `\\x${p.chave.hash.toString('hex')}` : null)), 'text')}::bytea[],
    ${sql.array(col((p) => p.tipo), 'text')}, ${sql.array(col((p) => p.variacao_id), 'uuid')},
    ${sql.array(col((p) => p.parte_id ?? null), 'uuid')}, ${sql.array(col((p) => p.quantidade ?? null), 'int4')},
    ${sql.array(col((p) => p.contado ?? null), 'int4')}, ${sql.array(col((p) => p.motivo), 'text')},
    ${sql.array(col((p) => p.observacao ?? null), 'text')})`;
}

/** One request's answer in a batch's; a failure of its subtransaction is an error (a 500). */
export function movimentoDoLote(written: unknown): MovimentoApi {
  const falha = Falha.safeParse(written);
  if (falha.success) throw new Error(`api_estoque_movimentar failed: ${falha.data.erro} ${falha.data.mensagem}`);
  return MovimentoApi.parse(written);
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
