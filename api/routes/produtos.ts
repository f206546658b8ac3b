// GET /produtos and GET /produtos/{id}: the catalog with variations, parts and price tiers per
// sales channel (DESIGN §9). The list costs 1 + 1 per 25 products (contract §8.2): charged from
// limite on admission, settled to the products actually returned.
import { z } from 'zod';
import { listarProdutos, lerProduto, type ProdutoRow } from '../../shared/db/produtos.ts';
import { naoEncontrado } from '../../shared/errors.ts';
import { conditionalHeaders, conditionalReply, etagFor } from '../etag.ts';
import { envelope, LIMITE_MAXIMO, LIMITE_PADRAO, listQuery, toPage } from '../lists.ts';
import { etagHeaders } from '../openapi.ts';
import { exemploProduto } from './exemplos.ts';
import { defineRoute, oneResource, type Cost } from './types.ts';

const dataHora = z.iso.datetime({ offset: true });

export const Produto = z.object({
  id: z.uuid(),
  sku: z.string().describe('Unique per account.'),
  nome: z.string(),
  descricao: z.string().nullable(),
  ativo: z.boolean(),
  variacoes: z.array(z.object({
    id: z.uuid(),
    sku: z.string(),
    nome: z.string(),
    ativa: z.boolean(),
    quantidade_minima: z.number().int().min(1).describe('Stock movements of this variation move at least this many units.'),
    multiplo: z.number().int().min(1).describe('Stock movements of this variation move a multiple of this.'),
    partes: z.array(z.object({ id: z.uuid(), nome: z.string(), quantidade: z.number().int().min(1) }).strict())
      .describe('Parts printed separately; stock may be kept per part.'),
    precos: z.array(z.object({
      canal_id: z.uuid(),
      faixas: z.array(z.object({
        a_partir_de: z.number().int().min(1).describe('From this quantity on…'),
        preco_centavos: z.number().int().min(0).describe('…each unit costs this.'),
      }).strict()).min(1),
    }).strict()).describe('Price tiers per sales channel; a channel without tiers does not sell the variation.'),
  }).strict()),
  criado_em: dataHora,
  atualizado_em: dataHora.describe('Moves when the product, a variation, a part or a price tier changes.'),
}).strict();

const booleano = z.enum(['true', 'false']).transform((v) => v === 'true');

const query = listQuery.extend({
  ordem: z.enum(['criado_em', 'atualizado_em']).default('criado_em')
    .describe('criado_em (default) or atualizado_em: with atualizado_desde, fetches only what changed.'),
  sku: z.string().min(1).max(64).optional().describe('The sku of the product or of one of its variations.'),
  ativo: booleano.optional(),
  canal_id: z.uuid().optional().describe('Only products with a price tier on this channel.'),
}).strict();

const present = ({ cursor_ts: _c, row_version: _v, ...produto }: ProdutoRow) => produto;

/** Units of a /produtos call that returns (or may return) n products. */
export const unidadesProdutos = (n: number) => 1 + Math.floor(n / 25);

/** Admission charges for a full page: limite as asked (the default when absent or unreadable). */
export function custoProdutos(raw: URLSearchParams): Cost {
  const asked = Number(raw.get('limite') ?? LIMITE_PADRAO);
  const limite = Number.isInteger(asked) && asked >= 1 ? Math.min(asked, LIMITE_MAXIMO) : LIMITE_PADRAO;
  return { units: unidadesProdutos(limite), classe: limite > LIMITE_PADRAO ? 'expensive' : 'read' };
}

export const listProdutos = defineRoute({
  operationId: 'listProdutos',
  method: 'GET',
  path: '/produtos',
  tag: 'Catálogo',
  summary: 'List products with prices per channel',
  description: 'Costs 1 unit plus 1 for every 25 products returned (limite is charged first, the difference given back).',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: custoProdutos,
  query,
  responses: { 200: { description: 'A page of products.', schema: envelope(Produto), example: { dados: [exemploProduto], proximo_cursor: null } } },
  handler: async ({ caller, query, db }) => {
    const rows = await listarProdutos(db, caller.contaId, query);
    const page = toPage(rows, query.limite, present);
    return { status: 200, body: page, billing: { units: unidadesProdutos(page.dados.length) } };
  },
});

export const getProduto = defineRoute({
  operationId: 'getProduto',
  method: 'GET',
  path: '/produtos/{id}',
  tag: 'Catálogo',
  summary: 'View one product',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: oneResource,
  params: z.object({ id: z.uuid() }),
  headers: conditionalHeaders,
  responses: {
    200: { description: 'The product.', schema: Produto, headers: etagHeaders, example: exemploProduto },
    304: { description: 'Not modified since the ETag given; no body, nothing charged in the month.', headers: etagHeaders },
  },
  handler: async ({ caller, params, headers, db }) => {
    const row = await lerProduto(db, caller.contaId, params.id);
    if (!row) throw naoEncontrado('O produto não existe nesta conta.');
    return conditionalReply(headers['if-none-match'], etagFor(row.id, row.row_version), () => present(row));
  },
});
