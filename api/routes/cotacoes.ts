// Quotations (DESIGN §9-10): list, read with ETag, create as a draft, change the status. The
// state machine and the events live in the database, so the API is one more writer among the
// screen, the customer link and the routine.
import { z } from 'zod';
import { lerCotacao, listarCotacoes, criarCotacao, mudarStatusCotacao, type CotacaoRow } from '../../shared/db/cotacoes.ts';
import type { Db } from '../../shared/db/pool.ts';
import { ITEM_COTACAO_TIPOS, STATUS_COTACAO } from '../../shared/domain/cotacoes.ts';
import { naoEncontrado } from '../../shared/errors.ts';
import { conditionalHeaders, conditionalReply, etagFor } from '../etag.ts';
import { idempotencyHeaders } from '../idempotency.ts';
import { etagHeaders, replayHeaders } from '../openapi.ts';
import { envelope, listCost, listQuery, toPage } from '../lists.ts';
import { Centavos, DataHora, Id, NomeItem, Quantidade, Texto } from './cotacoes-campos.ts';
import { exemploCotacao, exemploNovaCotacao } from './exemplos.ts';
import { defineRoute, oneResource, type Cost } from './types.ts';

export const ItemCotacao = z.object({
  id: Id,
  tipo: z.enum(ITEM_COTACAO_TIPOS),
  produto_id: Id.nullable(),
  variacao_id: Id.nullable(),
  nome: z.string(),
  quantidade: Quantidade,
  preco_unitario_centavos: Centavos,
});

export const Cotacao = z.object({
  id: Id,
  codigo: z.string().regex(/^COT-\d{6,}$/).describe('Sequential per account: COT-000001, COT-000002…'),
  status: z.enum(STATUS_COTACAO),
  versao: z.number().int().min(1).describe('Rises by one each time the quotation is sent again after a revision.'),
  cliente_nome: z.string().nullable().describe('null after the customer is anonymized (data-protection law).'),
  canal_id: Id.nullable(),
  validade: z.iso.date().nullable().describe('Last day the offer holds; a sent quotation past it becomes expirada.'),
  observacao: z.string().nullable(),
  itens: z.array(ItemCotacao),
  valor_total_centavos: Centavos.describe('Sum of quantidade × preco_unitario_centavos of the items.'),
  enviada_em: DataHora.nullable().describe('When it was last sent to the customer.'),
  criado_em: DataHora,
  atualizado_em: DataHora,
});

const apresentar = ({ row_version: _v, ...cotacao }: CotacaoRow) => cotacao;
const apresentarPagina = ({ cursor_ts: _c, ...row }: CotacaoRow & { cursor_ts: string }) => apresentar(row);

async function lerOu404(db: Db, contaId: string, id: string): Promise<CotacaoRow> {
  const row = await lerCotacao(db, contaId, id);
  if (!row) throw naoEncontrado('A cotação não existe nesta conta.');
  return row;
}

const PorId = z.object({ id: Id });

const listCotacoes = defineRoute({
  operationId: 'listCotacoes',
  method: 'GET',
  path: '/cotacoes',
  tag: 'Cotações',
  summary: 'List quotations',
  description: 'Oldest first. Filters: status, criado_desde, atualizado_desde; two or more cost 3 units.',
  scope: 'cotacoes:ler',
  permission: 'cotacoes.ver',
  cost: listCost,
  query: listQuery.extend({
    status: z.enum(STATUS_COTACAO).optional().describe('Only quotations in this status.'),
    criado_desde: DataHora.optional().describe('Only quotations created at or after this instant.'),
  }).strict(),
  responses: { 200: { description: 'A page of quotations, oldest first.', schema: envelope(Cotacao), example: { dados: [exemploCotacao], proximo_cursor: null } } },
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarCotacoes(db, caller.contaId, query), query.limite, apresentarPagina),
  }),
});

const getCotacao = defineRoute({
  operationId: 'getCotacao',
  method: 'GET',
  path: '/cotacoes/{id}',
  tag: 'Cotações',
  summary: 'View one quotation',
  scope: 'cotacoes:ler',
  permission: 'cotacoes.ver',
  cost: oneResource,
  params: PorId,
  headers: conditionalHeaders,
  responses: {
    200: { description: 'The quotation.', schema: Cotacao, headers: etagHeaders, example: exemploCotacao },
    304: { description: 'Not modified since the ETag given; no body, nothing charged in the month.', headers: etagHeaders },
  },
  handler: async ({ caller, params, headers, db }) => {
    const row = await lerOu404(db, caller.contaId, params.id);
    return conditionalReply(headers['if-none-match'], etagFor(row.id, row.row_version), () => apresentar(row));
  },
});

const NovoItemCatalogo = z.object({
  tipo: z.literal('catalogo'),
  variacao_id: Id,
  quantidade: Quantidade,
  preco_unitario_centavos: Centavos.nullish().describe("Omitted: the channel's price tier for the quantity (canal_id needed)."),
  nome: NomeItem.nullish().describe('Omitted: the product and variation names.'),
}).strict();

const NovoItemAvulso = z.object({
  tipo: z.literal('avulso'),
  nome: NomeItem,
  quantidade: Quantidade,
  preco_unitario_centavos: Centavos,
}).strict();

const NovaCotacao = z.object({
  cliente_nome: z.string().trim().min(1).max(200),
  canal_id: Id.nullish().describe('Sales channel whose price tiers price the catalog items.'),
  validade: z.iso.date().nullish().describe("Today or later, in the account's time zone."),
  observacao: Texto.nullish(),
  itens: z.array(z.discriminatedUnion('tipo', [NovoItemCatalogo, NovoItemAvulso])).min(1).max(100),
}).strict();

const escrita = (units: number) => (): Cost => ({ units, classe: 'write' });

const createCotacao = defineRoute({
  operationId: 'createCotacao',
  method: 'POST',
  path: '/cotacoes',
  tag: 'Cotações',
  summary: 'Create a quotation as a draft',
  description: 'Created as rascunho with the next codigo of the account. A catalog item without '
    + "preco_unitario_centavos is priced from the channel's tier for its quantity; none gives 422 "
    + 'preco_indisponivel. Idempotency-Key is optional. Costs 5 units.',
  scope: 'cotacoes:escrever',
  permission: 'cotacoes.editar',
  cost: escrita(5),
  headers: idempotencyHeaders(false),
  idempotency: 'optional',
  body: NovaCotacao,
  refusals: [422],
  bodyExample: exemploNovaCotacao,
  responses: {
    201: { description: 'The quotation created.', schema: Cotacao, headers: replayHeaders, example: { ...exemploCotacao, status: 'rascunho', versao: 1, enviada_em: null, observacao: null } },
  },
  replay: async ({ caller, db }, id) => apresentar(await lerOu404(db, caller.contaId, id)),
  handler: async ({ caller, body, db }) => {
    const id = await criarCotacao(db, caller.contaId, {
      clienteNome: body.cliente_nome,
      canalId: body.canal_id,
      validade: body.validade,
      observacao: body.observacao,
      itens: body.itens.map((item) => item.tipo === 'catalogo'
        ? { tipo: 'catalogo', variacaoId: item.variacao_id, quantidade: item.quantidade, precoUnitarioCentavos: item.preco_unitario_centavos ?? undefined, nome: item.nome ?? undefined }
        : { tipo: 'avulso', nome: item.nome, quantidade: item.quantidade, precoUnitarioCentavos: item.preco_unitario_centavos }),
    });
    return { status: 201, body: apresentar(await lerOu404(db, caller.contaId, id)), resourceId: id };
  },
});

const changeCotacaoStatus = defineRoute({
  operationId: 'changeCotacaoStatus',
  method: 'POST',
  path: '/cotacoes/{id}/status',
  tag: 'Cotações',
  summary: 'Change the quotation status',
  description: 'Allowed: rascunho → enviada | cancelada; enviada → aprovada | recusada | rascunho (a revision: '
    + 'versao rises when sent again); recusada → rascunho. Anything else, expirada included (only the daily '
    + 'routine expires), is 422 with motivo transicao_invalida. Concurrent changes of one quotation are applied '
    + 'one after the other. Idempotency-Key is optional. Costs 2 units.',
  scope: 'cotacoes:escrever',
  permission: 'cotacoes.editar',
  cost: escrita(2),
  params: PorId,
  headers: idempotencyHeaders(false),
  idempotency: 'optional',
  body: z.object({ status: z.enum(STATUS_COTACAO) }).strict(),
  refusals: [422],
  bodyExample: { status: 'aprovada' },
  responses: {
    200: { description: 'The quotation in its new status.', schema: Cotacao, headers: replayHeaders, example: { ...exemploCotacao, status: 'aprovada' } },
  },
  replay: async ({ caller, db }, id) => apresentar(await lerOu404(db, caller.contaId, id)),
  handler: async ({ caller, params, body, db }) => {
    await mudarStatusCotacao(db, caller.contaId, params.id, body.status);
    return { status: 200, body: apresentar(await lerOu404(db, caller.contaId, params.id)), resourceId: params.id };
  },
});

export const rotasDeCotacoes = [listCotacoes, createCotacao, getCotacao, changeCotacaoStatus];
