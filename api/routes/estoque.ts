// GET /estoque (finished-part balances) and GET /estoque-insumos (supply balances). Both lists
// follow GET /canais: listQuery plus filters, listCost, keyset pages.
import { z } from 'zod';
import { listarSaldos, TIPOS_LOCAL, type SaldoRow } from '#shared/db/estoque.ts';
import { listarInsumos, TIPOS_INSUMO, UNIDADES, type InsumoRow } from '#shared/db/insumos.ts';
import { conditionalList, listResponses, envelope, listCost, listQuery, toPage } from './lists.ts';
import { exemploSaldo, exemploSaldoInsumo } from './exemplos.ts';
import { defineRoute } from './types.ts';

const dataHora = z.iso.datetime({ offset: true });

export const Saldo = z.object({
  id: z.uuid(),
  variacao_id: z.uuid(),
  produto_id: z.uuid(),
  parte_id: z.uuid().nullable().describe('null: o saldo da variação inteira.'),
  local_id: z.uuid(),
  local_tipo: z.enum(TIPOS_LOCAL).describe('proprio (movimentado por POST /estoque/movimentos) ou consignado (somente leitura).'),
  saldo: z.number().int().min(0),
  criado_em: dataHora,
  atualizado_em: dataHora,
}).strict();

export const SaldoInsumo = z.object({
  id: z.uuid().describe('O id do insumo (insumo.id).'),
  insumo: z.object({
    tipo: z.enum(TIPOS_INSUMO),
    id: z.uuid().describe('Em material_cor, o id da cor em GET /insumos/materiais.'),
  }).strict(),
  nome: z.string(),
  unidade: z.enum(UNIDADES),
  saldo: z.number().int().min(0),
  minimo: z.number().int().min(0),
  abaixo_do_minimo: z.boolean().describe('`saldo < minimo`.'),
  criado_em: dataHora,
  atualizado_em: dataHora,
}).strict();

const presentSaldo = ({ cursor_ts: _c, ...saldo }: SaldoRow) => saldo;
const presentInsumo = ({ cursor_ts: _c, tipo, ...insumo }: InsumoRow & { cursor_ts: string }) => ({
  id: insumo.id,
  insumo: { tipo, id: insumo.id },
  nome: insumo.nome,
  unidade: insumo.unidade,
  saldo: insumo.saldo,
  minimo: insumo.minimo,
  abaixo_do_minimo: insumo.abaixo_do_minimo,
  criado_em: insumo.criado_em,
  atualizado_em: insumo.atualizado_em,
});

export const listEstoque = defineRoute({
  operationId: 'listEstoque',
  method: 'GET',
  path: '/estoque',
  tag: 'Estoque',
  summary: 'Lista os saldos de peças prontas',
  scope: 'estoque:ler',
  permission: 'estoque_produtos.ver',
  cost: listCost,
  query: listQuery('estoque', {
    variacao_id: z.uuid().optional(),
    produto_id: z.uuid().optional(),
    local_id: z.uuid().optional(),
  }),
  ...conditionalList,
  responses: listResponses('Uma página de saldos, do mais antigo ao mais novo.', envelope(Saldo), { dados: [exemploSaldo], proximo_cursor: null }),
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarSaldos(db, caller.contaId, query), query, presentSaldo),
  }),
});

export const listEstoqueInsumos = defineRoute({
  operationId: 'listEstoqueInsumos',
  method: 'GET',
  path: '/estoque-insumos',
  tag: 'Estoque',
  summary: 'Lista os saldos de insumos',
  scope: 'estoque:ler',
  permission: 'estoque_insumos.ver',
  cost: listCost,
  query: listQuery('estoque-insumos', {
    abaixo_do_minimo: z.enum(['true', 'false']).transform((v) => v === 'true').optional()
      .describe('true: só os insumos abaixo do mínimo; false: só os que estão no mínimo ou acima dele.'),
    tipo: z.enum(TIPOS_INSUMO).optional(),
  }),
  ...conditionalList,
  responses: listResponses('Uma página de saldos de insumos, do mais antigo ao mais novo.', envelope(SaldoInsumo), { dados: [exemploSaldoInsumo], proximo_cursor: null }),
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarInsumos(db, caller.contaId, query), query, presentInsumo),
  }),
});
