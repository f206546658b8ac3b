// Finished-part stock: balances per location (GET /estoque), movements (POST /estoque/movimentos
// and the screen) and locations. Every movement is made by estoque_movimentar (sql/code/estoque.sql),
// through the API's two entry points (sql/code/estoque_api.sql) or, for the screen, directly: one
// round trip that checks, locks, moves and records.
import { z } from 'zod';
import type { Motivo } from '../errors.ts';
import { pageClauses, type Posicao } from './paging.ts';
import type { FragmentSqlToken } from 'slonik';
import { sql, type Db } from './pool.ts';

export const TIPOS_MOVIMENTO = ['entrada', 'saida', 'ajuste'] as const;
export const MOTIVOS_MOVIMENTO = ['venda_loja', 'venda_marketplace', 'perda', 'devolucao', 'correcao', 'outro'] as const;
export const TIPOS_LOCAL = ['proprio', 'consignado'] as const;

/** What estoque_movimentos' CHECKs allow: a quantity moved or counted, and an observation's length. */
export const QUANTIDADE_MAXIMA = 99_999;
export const OBSERVACAO_MAXIMA = 200;

/**
 * Which of quantidade and contado a movement of this tipo takes, and which it must not: an ajuste is
 * a count, the others move a quantity (estoque_movimento_preparar refuses anything else).
 */
export const campoDoTipo = (tipo: (typeof TIPOS_MOVIMENTO)[number]) =>
  tipo === 'ajuste' ? ({ usa: 'contado', dispensa: 'quantidade' } as const) : ({ usa: 'quantidade', dispensa: 'contado' } as const);

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
  cursor?: Posicao;
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
  referencia_externa: z.string().nullable(),
  metadados: z.record(z.string(), z.string()),
});
export type MovimentoRow = z.infer<typeof MovimentoRow>;

/** The integrator's references of a record it creates (docs/decisions/0031-external-references.md). */
export type Referencias = { referencia_externa?: string; metadados?: Record<string, string> };

export type NovoMovimento = Referencias & {
  tipo: (typeof TIPOS_MOVIMENTO)[number];
  variacao_id: string;
  parte_id?: string;
  quantidade?: number;
  contado?: number;
  motivo: (typeof MOTIVOS_MOVIMENTO)[number];
  observacao?: string;
};

/** A movement the API posts names its variation by id or by SKU (exactly one of the two). */
export type MovimentoPorVariacaoOuSku = Omit<NovoMovimento, 'variacao_id'> & { variacao_id?: string; sku?: string };

/** Why a movement was refused (422 motivo), with the number its text gives (limite). */
export const RECUSAS_DE_MOVIMENTO = ['referencia_invalida', 'abaixo_do_minimo', 'fora_do_multiplo', 'saldo_insuficiente', 'sku_ambiguo'] as const;
export type RecusaDeMovimento = Extract<Motivo, (typeof RECUSAS_DE_MOVIMENTO)[number]>;

const Resultado = z.object({
  recusa: z.enum(RECUSAS_DE_MOVIMENTO).nullable(),
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
  referencia_externa: z.string().nullable(),
  metadados: z.record(z.string(), z.string()).nullable(),
});

export type Movimentado =
  | { ok: true; movimento: MovimentoRow }
  | { ok: false; recusa: RecusaDeMovimento; limite: number | null };

/**
 * The movements' columns as estoque_movimentar and the API's entry points take them, one array a
 * field (p_tipos … p_metadados), in the order given.
 */
function colunasDosMovimentos(itens: readonly MovimentoPorVariacaoOuSku[]): FragmentSqlToken {
  const col = <T>(pick: (m: MovimentoPorVariacaoOuSku) => T) => itens.map(pick);
  return sql.fragment`${sql.array(col((m) => m.tipo), 'text')}, ${sql.array(col((m) => m.variacao_id ?? null), 'uuid')},
    ${sql.array(col((m) => m.sku ?? null), 'text')},
    ${sql.array(col((m) => m.parte_id ?? null), 'uuid')}, ${sql.array(col((m) => m.quantidade ?? null), 'int4')},
    ${sql.array(col((m) => m.contado ?? null), 'int4')}, ${sql.array(col((m) => m.motivo), 'text')},
    ${sql.array(col((m) => m.observacao ?? null), 'text')}, ${sql.array(col((m) => m.referencia_externa ?? null), 'text')},
    ${sql.array(col((m) => (m.metadados ? JSON.stringify(m.metadados) : null)), 'text')}::jsonb[]`;
}

/**
 * Posts a movement in the caller's transaction, by whoever it declared (origem_da_mudanca). localId
 * is for the screen (consignment); the API passes none and moves the account's own location.
 */
export async function movimentar(db: Db, contaId: string, m: NovoMovimento, localId: string | null = null): Promise<Movimentado> {
  const r = await db.one(sql.type(Resultado)`
    SELECT m.* FROM estoque_movimentar(NULL, ${sql.array([contaId], 'uuid')}, NULL, ${colunasDosMovimentos([m])},
                                       p_locais => ${sql.array([localId], 'uuid')}) r, unnest(r.movimentos) m`);
  if (r.recusa) return { ok: false, recusa: r.recusa, limite: r.limite };
  return { ok: true, movimento: MovimentoRow.parse(r) };
}

// A movement's answer from api_estoque_movimentar: how its Idempotency-Key was claimed and the
// movement made or refused ({"claim":"running"} alone for a key repeated within one batch).
const nulo = <T extends z.ZodType>(type: T) => type.nullable().default(null);
// A movement as json: its timestamp arrives as PostgreSQL wrote it, normalized like every other (pool.ts).
const MovimentoJson = MovimentoRow.extend({ criado_em: z.string().transform((v) => new Date(v).toISOString()) });
export const MovimentoApi = z.object({
  claim: z.enum(['new', 'running', 'conflito', 'done']),
  status_code: nulo(z.number()),
  codigo: nulo(z.string()),
  motivo: nulo(z.string()),
  recusa: nulo(z.enum(RECUSAS_DE_MOVIMENTO)),
  limite: nulo(z.number().int()),
  movimento: nulo(MovimentoJson),
});
export type MovimentoApi = z.infer<typeof MovimentoApi>;
/** A movement of the batch that failed in its own subtransaction (the others went on). */
const Falha = z.object({ erro: z.string(), mensagem: z.string() });

/** A movement posted through the API: who makes it, with its Idempotency-Key (null: none). */
export type MovimentoPedido = MovimentoPorVariacaoOuSku & {
  contaId: string;
  chaveId: string;
  chave: { key: string; route: string; hash: Buffer } | null;
};

/**
 * POST /estoque/movimentos for a batch of admitted requests (api_estoque_movimentar): each claims its
 * Idempotency-Key, moves the balance or is refused, and keeps its key's record, in one round trip and
 * one commit.
 */
export function movimentosEmLote(pedidos: readonly MovimentoPedido[]): FragmentSqlToken {
  const col = <T>(pick: (p: MovimentoPedido) => T) => pedidos.map(pick);
  return sql.fragment`api_estoque_movimentar(
    ${sql.array(col((p) => p.contaId), 'uuid')}, ${sql.array(col((p) => p.chaveId), 'uuid')},
    ${sql.array(col((p) => p.chave?.key ?? null), 'text')}, ${sql.array(col((p) => p.chave?.route ?? null), 'text')},
    ${sql.array(col((p) => (p.chave ? `\\x${p.chave.hash.toString('hex')}` : null)), 'text')}::bytea[],
    ${colunasDosMovimentos(pedidos)})`;
}

/**
 * One request's answer in a batch's. A failure of its subtransaction is that request's error, with
 * its SQLSTATE: a data error becomes a 400 or 422 (shared/errors.ts), anything else a 500.
 */
export function movimentoDoLote(written: unknown): MovimentoApi {
  const falha = Falha.safeParse(written);
  if (falha.success) throw Object.assign(new Error(`api_estoque_movimentar failed: ${falha.data.mensagem}`), { code: falha.data.erro });
  return MovimentoApi.parse(written);
}

// The movement history (GET /estoque/movimentos): the movements of the account's own location, the
// one the API moves (consignment movements are the screen's).
const colunasMovimento = sql.fragment`
  m.id, m.tipo, m.variacao_id, m.parte_id, m.local_id, m.quantidade, m.saldo_antes, m.saldo_depois, m.motivo,
  m.observacao, m.criado_em, m.referencia_externa, m.metadados`;
const doLocalProprio = (contaId: string) =>
  sql.fragment`m.conta_id = ${contaId} AND m.local_id = (SELECT id FROM locais WHERE conta_id = ${contaId} AND tipo = 'proprio')`;

export type FiltrosMovimentos = {
  limite: number;
  cursor?: Posicao;
  variacao_id?: string;
  sku?: string;
  tipo?: MovimentoRow['tipo'];
  motivo?: MovimentoRow['motivo'];
  criado_desde?: string;
  criado_ate?: string;
  referencia_externa?: string;
};

const MovimentoPageRow = MovimentoRow.extend({ cursor_ts: z.string() });

/**
 * A page of the history, oldest first. sku is a variation's SKU or a product's (then every variation
 * of the product); criado_ate is exclusive, so consecutive windows never share a movement.
 */
export async function listarMovimentos(db: Db, contaId: string, filtros: FiltrosMovimentos): Promise<readonly z.infer<typeof MovimentoPageRow>[]> {
  const page = pageClauses('m', 'criado_em', filtros);
  const conditions = [doLocalProprio(contaId), page.where];
  if (filtros.variacao_id) conditions.push(sql.fragment`m.variacao_id = ${filtros.variacao_id}`);
  if (filtros.sku) {
    conditions.push(sql.fragment`m.variacao_id IN (
      SELECT id FROM variacoes WHERE conta_id = ${contaId} AND sku = ${filtros.sku}
      UNION ALL
      SELECT v.id FROM produtos p JOIN variacoes v ON v.conta_id = p.conta_id AND v.produto_id = p.id
       WHERE p.conta_id = ${contaId} AND p.sku = ${filtros.sku})`);
  }
  if (filtros.tipo) conditions.push(sql.fragment`m.tipo = ${filtros.tipo}`);
  if (filtros.motivo) conditions.push(sql.fragment`m.motivo = ${filtros.motivo}`);
  if (filtros.criado_desde) conditions.push(sql.fragment`m.criado_em >= ${filtros.criado_desde}::timestamptz`);
  if (filtros.criado_ate) conditions.push(sql.fragment`m.criado_em < ${filtros.criado_ate}::timestamptz`);
  if (filtros.referencia_externa) conditions.push(sql.fragment`m.referencia_externa = ${filtros.referencia_externa}`);
  return db.any(sql.type(MovimentoPageRow)`
    SELECT ${colunasMovimento}, ${page.cursorColumn}
      FROM estoque_movimentos m
     WHERE ${sql.join(conditions, sql.fragment` AND `)}
     ${page.orderLimit}`);
}

export async function lerMovimento(db: Db, contaId: string, id: string): Promise<MovimentoRow | null> {
  // A named statement: parsed and planned once per connection (a one-record read is a hot path).
  return db.maybeOne(sql.prepared('ler_movimento', MovimentoRow)`
    SELECT ${colunasMovimento} FROM estoque_movimentos m WHERE ${doLocalProprio(contaId)} AND m.id = ${id}`);
}

/** The movements of a batch (POST /estoque/movimentos/lote), in the order they were posted. */
export async function lerMovimentosDoLote(db: Db, contaId: string, loteId: string): Promise<readonly MovimentoRow[]> {
  return db.any(sql.type(MovimentoRow)`
    SELECT ${colunasMovimento} FROM estoque_movimentos m
     WHERE m.conta_id = ${contaId} AND m.lote_id = ${loteId} ORDER BY m.lote_posicao`);
}

const Lote = z.union([
  z.object({ lote_id: z.string(), movimentos: z.array(MovimentoJson) }),
  z.object({ recusas: z.array(z.object({ indice: z.number().int(), recusa: z.enum(RECUSAS_DE_MOVIMENTO), limite: z.number().int().nullable() })) }),
]);
export type Lote = z.infer<typeof Lote>;

/**
 * Up to 100 movements of one account, all or none, in the caller's transaction
 * (api_estoque_movimentar_lote): the movements made, in the order given, or every refused item
 * with nothing written.
 */
export async function movimentarVarios(db: Db, contaId: string, itens: readonly MovimentoPorVariacaoOuSku[]): Promise<Lote> {
  const json = await db.oneFirst(sql.type(z.object({ lote: z.string() }))`
    SELECT api_estoque_movimentar_lote(${contaId}, ${colunasDosMovimentos(itens)})::text AS lote`);
  return Lote.parse(JSON.parse(json));
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
