// GET /produtos and GET /produtos/{id}: the catalog with variations, parts and price tiers per
// sales channel (docs/decisions/0028-catalog-documents.md). The list costs 1 + 1 per 25 products
// (contract §8.2): charged from limite on admission, settled to the products actually returned.
// Both read each product's document (shared/db/produtos.ts); a page's documents go to the client as
// PostgreSQL keeps them, most of them from those this process already holds
// (api/routes/document-cache.ts).
import { z } from 'zod';
import { lerProduto } from '#shared/db/produtos.ts';
import { paginaDeDocumentos } from './document-cache.ts';
import { conditionalList, listResponses, envelope, jsonPage, LIMITE_MAXIMO, LIMITE_PADRAO, listQuery, pageTail } from './lists.ts';
import { etagForVersions } from '../http/etag.ts';
import { exemploProduto } from './exemplos.ts';
import type { Cost } from '../admission/cost.ts';
import { defineRoute } from './types.ts';
import { umRegistro } from './um-registro.ts';

const dataHora = z.iso.datetime({ offset: true });

export const Produto = z.object({
  id: z.uuid(),
  sku: z.string().describe('Único na conta.'),
  nome: z.string(),
  descricao: z.string().nullable(),
  ativo: z.boolean(),
  variacoes: z.array(z.object({
    id: z.uuid(),
    sku: z.string(),
    nome: z.string(),
    ativa: z.boolean(),
    quantidade_minima: z.number().int().min(1).describe('Os movimentos de estoque desta variação movem no mínimo esta quantidade.'),
    multiplo: z.number().int().min(1).describe('Os movimentos de estoque desta variação movem múltiplos deste número.'),
    partes: z.array(z.object({ id: z.uuid(), nome: z.string(), quantidade: z.number().int().min(1) }).strict())
      .describe('Partes impressas separadamente; o estoque pode ser controlado por parte.'),
    precos: z.array(z.object({
      canal_id: z.uuid(),
      faixas: z.array(z.object({
        a_partir_de: z.number().int().min(1).describe('A partir desta quantidade…'),
        preco_centavos: z.number().int().min(0).describe('…cada unidade custa este valor.'),
      }).strict()).min(1),
    }).strict()).describe('Faixas de preço por canal de venda; um canal sem faixas não vende a variação.'),
  }).strict()),
  criado_em: dataHora,
  atualizado_em: dataHora.describe('Muda sempre que o produto, uma variação, uma parte ou uma faixa de preço é alterada.'),
}).strict();

const booleano = z.enum(['true', 'false']).transform((v) => v === 'true');

const query = listQuery('produtos', {
  ordem: z.enum(['criado_em', 'atualizado_em']).default('criado_em')
    .describe('criado_em (padrão) ou atualizado_em: com atualizado_desde, traz só o que mudou.'),
  sku: z.string().min(1).max(64).optional().describe('O sku do produto ou de uma de suas variações.'),
  ativo: booleano.optional(),
  canal_id: z.uuid().optional().describe('Só os produtos com faixa de preço neste canal.'),
});

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
  summary: 'Lista os produtos com os preços por canal',
  description: 'Custa 1 unidade, mais 1 a cada 25 produtos retornados (cobra-se pelo limite pedido e a diferença é devolvida).',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: custoProdutos,
  query,
  ...conditionalList,
  responses: listResponses('Uma página de produtos.', envelope(Produto), { dados: [exemploProduto], proximo_cursor: null }),
  handler: async ({ caller, query, db, deps }) => {
    const pagina = await paginaDeDocumentos(db, deps.documentos, caller.contaId, query);
    // A product's document changes only with its version (produtos_documentar): the page's tag is
    // its products' versions and its cursor, not a hash of its hundreds of KB.
    const versoes = pagina.produtos.map((p) => `${p.id}.${p.row_version}`).join(',');
    const etag = etagForVersions(versoes, pageTail(pagina.proxima, query));
    return { status: 200, json: jsonPage(pagina.documentos, pagina.proxima, query), etag, billing: { units: unidadesProdutos(pagina.produtos.length) } };
  },
});

export const getProduto = defineRoute({
  operationId: 'getProduto',
  method: 'GET',
  path: '/produtos/{id}',
  tag: 'Catálogo',
  summary: 'Mostra um produto',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  ...umRegistro({
    conditional: { tabela: 'produtos' }, descricao: 'O produto.', schema: Produto, exemplo: exemploProduto,
    ler: lerProduto, ausente: 'O produto não existe nesta conta.', versao: (lido) => lido.row_version, apresentar: (lido) => lido.produto,
  }),
});
