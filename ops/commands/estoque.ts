// Stock as the application's screen moves it: finished-part movements (in any location of the
// account, consignment included, unlike the API), locations, and supplies with their balances.
// Consuming a supply below its minimum emits estoque.baixo (at most once a day per supply).
import { z } from 'zod';
import {
  campoDoTipo, criarLocalConsignado, listarLocais, listarSaldos, MOTIVOS_MOVIMENTO, movimentar, OBSERVACAO_MAXIMA, QUANTIDADE_MAXIMA, TIPOS_MOVIMENTO,
} from '#shared/db/estoque.ts';
import { alterarInsumo, criarInsumo, listarInsumos, moverInsumo, TIPOS_INSUMO, UNIDADES, type MovimentoInsumo } from '#shared/db/insumos.ts';
import { cutPage, type Pagina, type Posicao } from '#shared/db/paging.ts';
import type { Pool } from '#shared/db/pool.ts';
import { defineCommand, UsageError } from '../command.ts';

const inteiro = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const booleano = z.enum(['true', 'false']).transform((v) => v === 'true');
const SALDO_MAXIMO = 2_000_000_000;

/** Every page of a list, for an operator who wants the whole of it. */
async function todas<R extends { id: string; cursor_ts: string }>(
  fetch: (page: Pagina) => Promise<readonly R[]>,
): Promise<Omit<R, 'cursor_ts'>[]> {
  const all: Omit<R, 'cursor_ts'>[] = [];
  let cursor: Posicao | undefined;
  do {
    const page = cutPage(await fetch({ limite: 100, cursor }), 100);
    all.push(...page.rows.map(({ cursor_ts: _c, ...row }) => row));
    cursor = page.next ?? undefined;
  } while (cursor);
  return all;
}

async function moverInsumoOuFalhar(pool: Pool, conta: string, insumo: string, movimento: MovimentoInsumo) {
  const result = await pool.transaction((tx) => moverInsumo(tx, conta, insumo, movimento));
  if (!result.ok && result.recusa === 'nao_encontrado') throw new UsageError(`supply ${insumo} not found in this account`);
  if (!result.ok) throw new Error(`the balance is ${result.saldo}; it cannot go below zero`);
  return { ...result.insumo, movido: result.quantidade };
}

export const estoqueCommands = [
  defineCommand({
    name: 'estoque move',
    summary: `Post a movement of finished parts (tipo: ${TIPOS_MOVIMENTO.join(', ')}; motivo: ${MOTIVOS_MOVIMENTO.join(', ')}); --local for a consignment location.`,
    options: z.object({
      conta: z.uuid(), variacao: z.uuid(), parte: z.uuid().optional(), tipo: z.enum(TIPOS_MOVIMENTO),
      quantidade: inteiro(1, QUANTIDADE_MAXIMA).optional(), contado: inteiro(0, QUANTIDADE_MAXIMA).optional(), motivo: z.enum(MOTIVOS_MOVIMENTO),
      observacao: z.string().max(OBSERVACAO_MAXIMA).optional(), local: z.uuid().optional(),
    }).refine((o) => o[campoDoTipo(o.tipo).usa] !== undefined && o[campoDoTipo(o.tipo).dispensa] === undefined, {
      path: ['quantidade'], message: 'entrada and saida take --quantidade; ajuste takes --contado',
    }),
    run: async (o, { pool, out }) => {
      const result = await pool.transaction((tx) => movimentar(tx, o.conta, {
        tipo: o.tipo, variacao_id: o.variacao, parte_id: o.parte, quantidade: o.quantidade, contado: o.contado,
        motivo: o.motivo, observacao: o.observacao,
      }, o.local ?? null));
      if (!result.ok) throw new Error(`movement refused: ${result.recusa}${result.limite !== null ? ` (${result.limite})` : ''}`);
      out(result.movimento);
    },
  }),
  defineCommand({
    name: 'estoque list',
    summary: 'List the finished-part balances of an account, every location.',
    options: z.object({ conta: z.uuid(), variacao: z.uuid().optional() }),
    run: async (o, { pool, out }) => out(await todas((page) => listarSaldos(pool, o.conta, { ...page, variacao_id: o.variacao }))),
  }),
  defineCommand({
    name: 'locais list',
    summary: 'List the stock locations of an account (one own, any consignment ones).',
    options: z.object({ conta: z.uuid() }),
    run: async (o, { pool, out }) => out(await listarLocais(pool, o.conta)),
  }),
  defineCommand({
    name: 'locais create',
    summary: 'Add a consignment location (a partner store holding the account\'s goods).',
    options: z.object({ conta: z.uuid(), nome: z.string().min(1).max(100) }),
    run: async (o, { pool, out }) => out(await criarLocalConsignado(pool, o.conta, o.nome)),
  }),
  defineCommand({
    name: 'insumos create',
    summary: `Create a component or packaging supply (unidade: ${UNIDADES.join(', ')}); material colors get theirs with cores create.`,
    options: z.object({
      conta: z.uuid(), tipo: z.enum(['componente', 'embalagem']), nome: z.string().min(1), unidade: z.enum(UNIDADES),
      saldo: inteiro(0, SALDO_MAXIMO).optional(), minimo: inteiro(0, SALDO_MAXIMO).optional(),
    }),
    run: async (o, { pool, out }) => out(await criarInsumo(pool, o.conta, o)),
  }),
  defineCommand({
    name: 'insumos set',
    summary: 'Change a supply: name or minimum (raising it above the balance warns with estoque.baixo).',
    options: z.object({ conta: z.uuid(), insumo: z.uuid(), nome: z.string().min(1).optional(), minimo: inteiro(0, SALDO_MAXIMO).optional() }),
    run: async (o, { pool, out }) => {
      const insumo = await alterarInsumo(pool, o.conta, o.insumo, o);
      if (!insumo) throw new UsageError(`supply ${o.insumo} not found in this account`);
      out(insumo);
    },
  }),
  defineCommand({
    name: 'insumos move',
    summary: 'Move a supply balance: compra adds --quantidade, consumo and perda subtract it, correcao sets --contado.',
    options: z.object({
      conta: z.uuid(), insumo: z.uuid(), motivo: z.enum(['compra', 'consumo', 'perda', 'correcao']),
      quantidade: inteiro(1, SALDO_MAXIMO).optional(), contado: inteiro(0, SALDO_MAXIMO).optional(),
    }).refine((o) => (o.motivo === 'correcao') === (o.contado !== undefined) && (o.motivo === 'correcao') !== (o.quantidade !== undefined), {
      path: ['quantidade'], message: 'correcao takes --contado; compra, consumo and perda take --quantidade',
    }),
    run: async (o, { pool, out }) => {
      const movimento: MovimentoInsumo = o.motivo === 'correcao'
        ? { motivo: 'correcao', contado: o.contado ?? 0 }
        : { motivo: o.motivo, quantidade: o.quantidade ?? 0 };
      out(await moverInsumoOuFalhar(pool, o.conta, o.insumo, movimento));
    },
  }),
  defineCommand({
    name: 'insumos consume',
    summary: 'Consume a supply (printing used it); below its minimum it warns with estoque.baixo.',
    options: z.object({ conta: z.uuid(), insumo: z.uuid(), quantidade: inteiro(1, SALDO_MAXIMO) }),
    run: async (o, { pool, out }) => out(await moverInsumoOuFalhar(pool, o.conta, o.insumo, { motivo: 'consumo', quantidade: o.quantidade })),
  }),
  defineCommand({
    name: 'insumos list',
    summary: `List the supplies of an account (tipo: ${TIPOS_INSUMO.join(', ')}).`,
    options: z.object({ conta: z.uuid(), abaixoDoMinimo: booleano.optional(), tipo: z.enum(TIPOS_INSUMO).optional() }),
    run: async (o, { pool, out }) =>
      out(await todas((page) => listarInsumos(pool, o.conta, { ...page, abaixo_do_minimo: o.abaixoDoMinimo, tipo: o.tipo }))),
  }),
];
