// Production orders (contract §2.1, §4.1): list, read with a strong ETag, create. valor_centavos is
// cost data (docs/decisions/0007-keys-scopes-and-permissions.md): present only on customer orders
// and only when the key's creator holds custos.ver; absent otherwise, never null. Orders change
// situacao in the application, not here.
import { z } from 'zod';
import { criarPedido, listarPedidos } from '#shared/db/pedidos.ts';
import { lerRepresentacao } from '#shared/db/representacoes.ts';
import type { Db } from '#shared/db/pool.ts';
import { PERMISSAO_CUSTOS } from '#shared/domain/acesso.ts';
import {
  ITEM_PEDIDO_SITUACOES,
  ITEM_PEDIDO_TIPOS,
  PAGAMENTO_SITUACOES,
  PEDIDO_ORIGENS,
  PEDIDO_TIPOS,
  PRIORIDADES,
  SITUACOES_PEDIDO,
} from '#shared/domain/producao.ts';
import { escopoInsuficiente, naoEncontrado } from '#shared/errors.ts';
import { idempotencyHeaders } from '../writes/idempotency.ts';
import { replayHeaders } from '../reference/openapi.ts';
import { Dia, ReferenciaExterna, referenciasLidas, referenciasNovas } from './fields.ts';
import { conditionalList, listResponses, envelope, jsonPage, listCost, listQuery } from './lists.ts';
import { cutPage } from '#shared/db/paging.ts';
import { Centavos, DataHora, Id, NomeItem, Quantidade } from './cotacoes-campos.ts';
import { exemploNovoPedido, exemploPedido, exemploPedidoEstoque } from './exemplos.ts';
import type { Caller } from '../admission/caller.ts';
import { defineRoute } from './types.ts';
import { umRegistro } from './um-registro.ts';

export const ItemPedido = z.object({
  id: Id,
  tipo: z.enum(ITEM_PEDIDO_TIPOS),
  produto_id: Id.nullable(),
  variacao_id: Id.nullable(),
  nome: z.string(),
  quantidade: Quantidade,
  situacao: z.enum(ITEM_PEDIDO_SITUACOES),
  etapa: z.string().nullable().describe('Nome da etapa atual do item; null antes da primeira.'),
});

export const Pedido = z.object({
  id: Id,
  codigo: z.string().regex(/^OP-\d{6,}$/).describe('Sequencial por conta: OP-000001, OP-000002…'),
  tipo: z.enum(PEDIDO_TIPOS),
  origem: z.enum(PEDIDO_ORIGENS),
  cotacao_id: Id.nullable(),
  cliente_nome: z.string().nullable().describe('null em pedidos de estoque e depois da anonimização pela LGPD.'),
  prazo: z.iso.date().nullable(),
  prioridade: z.enum(PRIORIDADES),
  situacao: z.enum(SITUACOES_PEDIDO),
  pagamento_situacao: z.enum(PAGAMENTO_SITUACOES).nullable().describe('null em pedidos de estoque.'),
  itens: z.array(ItemPedido),
  criado_em: DataHora,
  atualizado_em: DataHora,
  finalizado_em: DataHora.nullable(),
  valor_centavos: Centavos.optional().describe(
    'Dado de custo: só aparece em pedidos de cliente com valor, e só quando quem criou a chave tem a permissão custos.ver.'),
  ...referenciasLidas,
});

const verCustos = (caller: Caller) => caller.permissoes.includes(PERMISSAO_CUSTOS);

const PEDIDO_AUSENTE = 'O pedido de produção não existe nesta conta.';

/** The order as this caller reads it, for a reply of its own (a creation, a repetition). */
async function representado(db: Db, caller: Caller, id: string): Promise<string> {
  const pedido = await lerRepresentacao(db, 'pedidos_producao', caller.contaId, id, caller.permissoes);
  if (!pedido) throw naoEncontrado(PEDIDO_AUSENTE);
  return pedido.corpo;
}

const listPedidos = defineRoute({
  operationId: 'listPedidosProducao',
  method: 'GET',
  path: '/pedidos-producao',
  tag: 'Produção',
  summary: 'Lista os pedidos de produção',
  description: 'Do mais antigo ao mais novo. Filtros: situacao, tipo, prioridade, cotacao_id, atualizado_desde, referencia_externa; dois ou mais custam 3 unidades.',
  scope: 'pedidos:ler',
  permission: 'producao.ver',
  cost: listCost,
  query: listQuery('pedidos-producao', {
    situacao: z.enum(SITUACOES_PEDIDO).optional(),
    tipo: z.enum(PEDIDO_TIPOS).optional(),
    prioridade: z.enum(PRIORIDADES).optional(),
    cotacao_id: Id.optional().describe('Só os pedidos feitos a partir desta cotação.'),
    referencia_externa: ReferenciaExterna.optional().describe('Só os pedidos com esta referencia_externa (igual, letra a letra).'),
  }),
  ...conditionalList,
  responses: listResponses('Uma página de pedidos de produção, do mais antigo ao mais novo.', envelope(Pedido), { dados: [exemploPedido], proximo_cursor: null }),
  handler: async ({ caller, query, db }) => {
    const page = cutPage(await listarPedidos(db, caller.contaId, query, caller.permissoes), query.limite);
    return { status: 200, json: jsonPage(page.rows.map((row) => row.corpo), page.next, query) };
  },
});

// An order reads differently with and without cost data (custos.ver): one ETag variant each.
const VARIANTES = ['custos', 'sem-custos'] as const;

const getPedido = defineRoute({
  operationId: 'getPedidoProducao',
  method: 'GET',
  path: '/pedidos-producao/{id}',
  tag: 'Produção',
  summary: 'Mostra um pedido de produção',
  description: 'ETag forte; com If-None-Match (até 100 caracteres), responde 304 sem corpo quando nada mudou, '
    + 'ao custo de 1 na rajada e nada no mês.',
  scope: 'pedidos:ler',
  permission: 'producao.ver',
  ...umRegistro({
    representado: true, conditional: { tabela: 'pedidos_producao', variantes: VARIANTES }, descricao: 'O pedido de produção.',
    schema: Pedido, exemplo: exemploPedido, ausente: PEDIDO_AUSENTE,
    // Callers with and without custos.ver see different bodies: the tag tells them apart.
    variante: (caller) => VARIANTES[verCustos(caller) ? 0 : 1],
  }),
});

const NovoItemPedido = z.discriminatedUnion('tipo', [
  z.object({ tipo: z.literal('catalogo'), variacao_id: Id, quantidade: Quantidade, nome: NomeItem.nullish() }).strict(),
  z.object({
    tipo: z.literal('cotacao'),
    cotacao_item_id: Id.describe('Um item da cotação indicada em cotacao_id.'),
    quantidade: Quantidade.nullish().describe('Se omitida: a quantidade do item da cotação.'),
  }).strict(),
  z.object({ tipo: z.literal('avulso'), nome: NomeItem, quantidade: Quantidade }).strict(),
]);

const SO_CLIENTE = ['cotacao_id', 'cliente_nome', 'pagamento_situacao', 'valor_centavos'] as const;

const NovoPedido = z.object({
  tipo: z.enum(PEDIDO_TIPOS),
  cotacao_id: Id.nullish().describe('Uma cotação aprovada da conta (só em pedidos de cliente).'),
  cliente_nome: z.string().trim().min(1).max(200).nullish().describe('Pedidos de cliente; se omitido: o da cotação.'),
  prazo: Dia.nullish(),
  prioridade: z.enum(PRIORIDADES).nullish().describe('Se omitida: normal.'),
  pagamento_situacao: z.enum(PAGAMENTO_SITUACOES).nullish().describe('Pedidos de cliente; se omitida: nao_pago.'),
  valor_centavos: Centavos.nullish().describe('Pedidos de cliente; dado de custo: exige custos.ver. Se omitido: o total da cotação.'),
  itens: z.array(NovoItemPedido).min(1).max(100).optional().describe('Se omitido com cotacao_id: todos os itens da cotação.'),
  ...referenciasNovas,
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
  summary: 'Cria um pedido de produção',
  description: 'Criado como aberto, com origem api e o próximo codigo da conta. Uma cotação referenciada precisa estar '
    + 'aprovada (422 cotacao_nao_aprovada); um registro de outra conta ou desconhecido é 422 referencia_invalida. '
    + 'Aceita referencia_externa e metadados, devolvidos em toda leitura do pedido e levados nos eventos dele. '
    + 'Exige Idempotency-Key. Custa 5 unidades.',
  scope: 'pedidos:escrever',
  permission: 'producao.editar',
  cost: () => ({ units: 5, classe: 'write' }),
  headers: idempotencyHeaders(true),
  idempotency: 'required',
  body: NovoPedido,
  refusals: [422],
  bodyExample: exemploNovoPedido,
  responses: {
    201: {
      description: 'O pedido de produção criado.',
      schema: Pedido,
      headers: replayHeaders,
      example: exemploPedidoEstoque,
    },
  },
  replay: async ({ caller, db }, id) => JSON.parse(await representado(db, caller, id)),
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
      referenciaExterna: body.referencia_externa,
      metadados: body.metadados,
      itens: body.itens?.map((item) => {
        if (item.tipo === 'catalogo') return { tipo: 'catalogo', variacaoId: item.variacao_id, quantidade: item.quantidade, nome: item.nome ?? undefined };
        if (item.tipo === 'cotacao') return { tipo: 'cotacao', cotacaoItemId: item.cotacao_item_id, quantidade: item.quantidade ?? undefined };
        return { tipo: 'avulso', nome: item.nome, quantidade: item.quantidade };
      }),
    });
    return { status: 201, json: await representado(db, caller, id), resourceId: id };
  },
});

export const rotasDePedidos = [listPedidos, createPedido, getPedido];
