// Production orders (contract §2.1, §4.1): list, read with a strong ETag, create. valor_centavos
// is cost data (DESIGN §4): present only on customer orders and only when the key's creator holds
// custos.ver; absent otherwise, never null. Orders change situacao in the application, not here.
import { z } from 'zod';
import { criarPedido, lerPedido, listarPedidos, type PedidoRow } from '../../shared/db/pedidos.ts';
import type { Db } from '../../shared/db/pool.ts';
import { PERMISSAO_CUSTOS } from '../../shared/domain/acesso.ts';
import {
  ITEM_PEDIDO_SITUACOES,
  ITEM_PEDIDO_TIPOS,
  PAGAMENTO_SITUACOES,
  PEDIDO_ORIGENS,
  PEDIDO_TIPOS,
  PRIORIDADES,
  SITUACOES_PEDIDO,
} from '../../shared/domain/producao.ts';
import { escopoInsuficiente, naoEncontrado } from '../../shared/errors.ts';
import { conditionalHeaders, conditionalReply, etagFor } from '../etag.ts';
import { idempotencyHeaders } from '../idempotency.ts';
import { etagHeaders, replayHeaders } from '../openapi.ts';
import { envelope, listCost, listQuery, toPage } from '../lists.ts';
import { Centavos, DataHora, Id, NomeItem, Quantidade } from './cotacoes-campos.ts';
import { exemploNovoPedido, exemploPedido, exemploPedidoEstoque } from './exemplos.ts';
import { defineRoute, oneResource, type Caller } from './types.ts';

export const ItemPedido = z.object({
  id: Id,
  tipo: z.enum(ITEM_PEDIDO_TIPOS),
  produto_id: Id.nullable(),
  variacao_id: Id.nullable(),
  nome: z.string(),
  quantidade: Quantidade,
  situacao: z.enum(ITEM_PEDIDO_SITUACOES),
  etapa: z.string().nullable().describe("Name of the item's current stage; null before the first."),
});

export const Pedido = z.object({
  id: Id,
  codigo: z.string().regex(/^OP-\d{6,}$/).describe('Sequential per account: OP-000001, OP-000002…'),
  tipo: z.enum(PEDIDO_TIPOS),
  origem: z.enum(PEDIDO_ORIGENS),
  cotacao_id: Id.nullable(),
  cliente_nome: z.string().nullable().describe('null for stock orders and after anonymization under the data-protection law.'),
  prazo: z.iso.date().nullable(),
  prioridade: z.enum(PRIORIDADES),
  situacao: z.enum(SITUACOES_PEDIDO),
  pagamento_situacao: z.enum(PAGAMENTO_SITUACOES).nullable().describe('null for stock orders.'),
  itens: z.array(ItemPedido),
  criado_em: DataHora,
  atualizado_em: DataHora,
  finalizado_em: DataHora.nullable(),
  valor_centavos: Centavos.optional().describe(
    "Cost data: present only on customer orders with a value, and only when the key's creator holds custos.ver."),
});

const verCustos = (caller: Caller) => caller.permissoes.includes(PERMISSAO_CUSTOS);

function apresentar({ row_version: _v, valor_centavos, ...pedido }: PedidoRow, custos: boolean) {
  return pedido.tipo === 'cliente' && custos && valor_centavos !== null ? { ...pedido, valor_centavos } : pedido;
}

async function lerOu404(db: Db, contaId: string, id: string): Promise<PedidoRow> {
  const row = await lerPedido(db, contaId, id);
  if (!row) throw naoEncontrado('O pedido de produção não existe nesta conta.');
  return row;
}

const listPedidos = defineRoute({
  operationId: 'listPedidosProducao',
  method: 'GET',
  path: '/pedidos-producao',
  tag: 'Produção',
  summary: 'List production orders',
  description: 'Oldest first. Filters: situacao, tipo, prioridade, cotacao_id, atualizado_desde; two or more cost 3 units.',
  scope: 'pedidos:ler',
  permission: 'producao.ver',
  cost: listCost,
  query: listQuery.extend({
    situacao: z.enum(SITUACOES_PEDIDO).optional(),
    tipo: z.enum(PEDIDO_TIPOS).optional(),
    prioridade: z.enum(PRIORIDADES).optional(),
    cotacao_id: Id.optional().describe('Only orders made from this quotation.'),
  }).strict(),
  responses: { 200: { description: 'A page of production orders, oldest first.', schema: envelope(Pedido), example: { dados: [exemploPedido], proximo_cursor: null } } },
  handler: async ({ caller, query, db }) => {
    const custos = verCustos(caller);
    const rows = await listarPedidos(db, caller.contaId, query);
    return { status: 200, body: toPage(rows, query.limite, ({ cursor_ts: _c, ...row }) => apresentar(row, custos)) };
  },
});

const getPedido = defineRoute({
  operationId: 'getPedidoProducao',
  method: 'GET',
  path: '/pedidos-producao/{id}',
  tag: 'Produção',
  summary: 'View one production order',
  description: 'Strong ETag; If-None-Match (at most 100 characters) answers 304 without a body when nothing '
    + 'changed, costing 1 in the burst and nothing in the month.',
  scope: 'pedidos:ler',
  permission: 'producao.ver',
  cost: oneResource,
  params: z.object({ id: Id }),
  headers: conditionalHeaders,
  responses: {
    200: { description: 'The production order.', schema: Pedido, headers: etagHeaders, example: exemploPedido },
    304: { description: 'Not modified since the ETag given; no body, nothing charged in the month.', headers: etagHeaders },
  },
  handler: async ({ caller, params, headers, db }) => {
    const row = await lerOu404(db, caller.contaId, params.id);
    const custos = verCustos(caller);
    // Callers with and without custos.ver see different bodies: the tag tells them apart.
    const etag = etagFor(row.id, row.row_version, custos ? 'custos' : 'sem-custos');
    return conditionalReply(headers['if-none-match'], etag, () => apresentar(row, custos));
  },
});

const NovoItemPedido = z.discriminatedUnion('tipo', [
  z.object({ tipo: z.literal('catalogo'), variacao_id: Id, quantidade: Quantidade, nome: NomeItem.nullish() }).strict(),
  z.object({
    tipo: z.literal('cotacao'),
    cotacao_item_id: Id.describe('An item of the quotation named by cotacao_id.'),
    quantidade: Quantidade.nullish().describe("Omitted: the quotation item's quantity."),
  }).strict(),
  z.object({ tipo: z.literal('avulso'), nome: NomeItem, quantidade: Quantidade }).strict(),
]);

const SO_CLIENTE = ['cotacao_id', 'cliente_nome', 'pagamento_situacao', 'valor_centavos'] as const;

const NovoPedido = z.object({
  tipo: z.enum(PEDIDO_TIPOS),
  cotacao_id: Id.nullish().describe('An approved quotation of the account (customer orders only).'),
  cliente_nome: z.string().trim().min(1).max(200).nullish().describe("Customer orders; omitted: the quotation's."),
  prazo: z.iso.date().nullish(),
  prioridade: z.enum(PRIORIDADES).nullish().describe('Omitted: normal.'),
  pagamento_situacao: z.enum(PAGAMENTO_SITUACOES).nullish().describe('Customer orders; omitted: nao_pago.'),
  valor_centavos: Centavos.nullish().describe("Customer orders; cost data: needs custos.ver. Omitted: the quotation's total."),
  itens: z.array(NovoItemPedido).min(1).max(100).optional().describe("Omitted with cotacao_id: every item of the quotation."),
}).strict().superRefine((b, ctx) => {
  if (b.tipo === 'estoque') {
    for (const campo of SO_CLIENTE) if (b[campo] != null) ctx.addIssue({ code: 'custom', path: [campo], message: 'só em pedidos do tipo cliente' });
  }
  if (b.tipo === 'cliente' && !b.cliente_nome && !b.cotacao_id) {
    ctx.addIssue({ code: 'custom', path: ['cliente_nome'], message: 'obrigatório em pedidos de cliente sem cotacao_id' });
  }
  if (!b.itens && !b.cotacao_id) ctx.addIssue({ code: 'custom', path: ['itens'], message: 'obrigatório sem cotacao_id' });
  b.itens?.forEach((item, i) => {
    if (item.tipo === 'cotacao' && !b.cotacao_id) ctx.addIssue({ code: 'custom', path: ['itens', i, 'tipo'], message: 'itens do tipo cotacao precisam de cotacao_id' });
  });
});

const createPedido = defineRoute({
  operationId: 'createPedidoProducao',
  method: 'POST',
  path: '/pedidos-producao',
  tag: 'Produção',
  summary: 'Create a production order',
  description: 'Created aberto with origem api and the next codigo of the account. A referenced quotation must be '
    + 'aprovada (422 cotacao_nao_aprovada); any record of another account or unknown is 422 referencia_invalida. '
    + 'Idempotency-Key is optional. Costs 5 units.',
  scope: 'pedidos:escrever',
  permission: 'producao.editar',
  cost: () => ({ units: 5, classe: 'write' }),
  headers: idempotencyHeaders(false),
  idempotency: 'optional',
  body: NovoPedido,
  refusals: [422],
  bodyExample: exemploNovoPedido,
  responses: {
    201: {
      description: 'The production order created.',
      schema: Pedido,
      headers: replayHeaders,
      example: exemploPedidoEstoque,
    },
  },
  replay: async ({ caller, db }, id) => apresentar(await lerOu404(db, caller.contaId, id), verCustos(caller)),
  handler: async ({ caller, body, db }) => {
    if (body.valor_centavos != null && !verCustos(caller)) {
      throw escopoInsuficiente(`valor_centavos é dado de custo: quem criou a chave precisa da permissão ${PERMISSAO_CUSTOS}.`);
    }
    const id = await criarPedido(db, caller.contaId, {
      tipo: body.tipo,
      origem: 'api',
      cotacaoId: body.cotacao_id,
      clienteNome: body.cliente_nome,
      prazo: body.prazo,
      prioridade: body.prioridade ?? undefined,
      pagamentoSituacao: body.pagamento_situacao,
      valorCentavos: body.valor_centavos,
      itens: body.itens?.map((item) => {
        if (item.tipo === 'catalogo') return { tipo: 'catalogo', variacaoId: item.variacao_id, quantidade: item.quantidade, nome: item.nome ?? undefined };
        if (item.tipo === 'cotacao') return { tipo: 'cotacao', cotacaoItemId: item.cotacao_item_id, quantidade: item.quantidade ?? undefined };
        return { tipo: 'avulso', nome: item.nome, quantidade: item.quantidade };
      }),
    });
    return { status: 201, body: apresentar(await lerOu404(db, caller.contaId, id), verCustos(caller)), resourceId: id };
  },
});

export const rotasDePedidos = [listPedidos, createPedido, getPedido];
