// Quotations (docs/decisions/0029-quotation-and-order-states.md): list, read with ETag, create as a
// draft, change the status. The state machine and the events live in the database, so the API is
// one more writer among the screen, the customer link and the routine.
import { z } from 'zod';
import { lerCotacao, listarCotacoes, criarCotacao, mudarStatusCotacao, type CotacaoRow } from '#shared/db/cotacoes.ts';
import type { Db } from '#shared/db/pool.ts';
import { ITEM_COTACAO_TIPOS, STATUS_COTACAO, totalConhecido } from '#shared/domain/cotacoes.ts';
import { naoEncontrado, totalAcimaDoMaximo, VALOR_MAXIMO_CENTAVOS } from '#shared/errors.ts';
import { idempotencyHeaders } from '../writes/idempotency.ts';
import { replayHeaders } from '../reference/openapi.ts';
import { Dia, Instante, ReferenciaExterna, referenciasLidas, referenciasNovas } from './fields.ts';
import { conditionalList, listResponses, envelope, listCost, listQuery, toPage } from './lists.ts';
import { Centavos, DataHora, Id, NomeItem, PorId, Quantidade, Texto } from './cotacoes-campos.ts';
import { exemploCotacao, exemploNovaCotacao } from './exemplos.ts';
import type { Cost } from '../admission/cost.ts';
import { defineRoute } from './types.ts';
import { umRegistro } from './um-registro.ts';

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
  codigo: z.string().regex(/^COT-\d{6,}$/).describe('Sequencial por conta: COT-000001, COT-000002…'),
  status: z.enum(STATUS_COTACAO),
  versao: z.number().int().min(1).describe('Sobe um a cada vez que a cotação é reenviada depois de uma revisão.'),
  cliente_nome: z.string().nullable().describe('null depois que o cliente é anonimizado (LGPD).'),
  canal_id: Id.nullable(),
  validade: z.iso.date().nullable().describe('Último dia em que a oferta vale; depois dele, uma cotação enviada passa a expirada.'),
  observacao: z.string().nullable(),
  itens: z.array(ItemCotacao),
  valor_total_centavos: Centavos.describe('Soma de quantidade × preco_unitario_centavos dos itens.'),
  enviada_em: DataHora.nullable().describe('Quando foi enviada ao cliente pela última vez.'),
  criado_em: DataHora,
  atualizado_em: DataHora,
  ...referenciasLidas,
});

const apresentar = ({ row_version: _v, ...cotacao }: CotacaoRow) => cotacao;
const apresentarPagina = ({ cursor_ts: _c, ...row }: CotacaoRow & { cursor_ts: string }) => apresentar(row);

const COTACAO_AUSENTE = 'A cotação não existe nesta conta.';

async function lerOu404(db: Db, contaId: string, id: string): Promise<CotacaoRow> {
  const row = await lerCotacao(db, contaId, id);
  if (!row) throw naoEncontrado(COTACAO_AUSENTE);
  return row;
}

const listCotacoes = defineRoute({
  operationId: 'listCotacoes',
  method: 'GET',
  path: '/cotacoes',
  tag: 'Cotações',
  summary: 'Lista as cotações',
  description: 'Da mais antiga à mais nova. Filtros: status, criado_desde, atualizado_desde, referencia_externa; dois ou mais custam 3 unidades.',
  scope: 'cotacoes:ler',
  permission: 'cotacoes.ver',
  cost: listCost,
  query: listQuery('cotacoes', {
    status: z.enum(STATUS_COTACAO).optional().describe('Só as cotações neste status.'),
    criado_desde: Instante.optional().describe('Só as cotações criadas a partir deste instante, inclusive.'),
    referencia_externa: ReferenciaExterna.optional().describe('Só as cotações com esta referencia_externa (igual, letra a letra).'),
  }),
  ...conditionalList,
  responses: listResponses('Uma página de cotações, da mais antiga à mais nova.', envelope(Cotacao), { dados: [exemploCotacao], proximo_cursor: null }),
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarCotacoes(db, caller.contaId, query), query, apresentarPagina),
  }),
});

const getCotacao = defineRoute({
  operationId: 'getCotacao',
  method: 'GET',
  path: '/cotacoes/{id}',
  tag: 'Cotações',
  summary: 'Mostra uma cotação',
  scope: 'cotacoes:ler',
  permission: 'cotacoes.ver',
  ...umRegistro({
    conditional: { tabela: 'cotacoes' }, descricao: 'A cotação.', schema: Cotacao, exemplo: exemploCotacao,
    ler: lerCotacao, ausente: COTACAO_AUSENTE, versao: (row) => row.row_version, apresentar: (row) => apresentar(row),
  }),
});

const NovoItemCatalogo = z.object({
  tipo: z.literal('catalogo'),
  variacao_id: Id,
  quantidade: Quantidade,
  preco_unitario_centavos: Centavos.nullish().describe('Se omitido: o preço da faixa do canal para a quantidade (exige canal_id).'),
  nome: NomeItem.nullish().describe('Se omitido: os nomes do produto e da variação.'),
}).strict();

const NovoItemAvulso = z.object({
  tipo: z.literal('avulso'),
  nome: NomeItem,
  quantidade: Quantidade,
  preco_unitario_centavos: Centavos,
}).strict();

const NovaCotacao = z.object({
  cliente_nome: z.string().trim().min(1).max(200),
  canal_id: Id.nullish().describe('Canal de venda cujas faixas de preço dão o preço dos itens do catálogo.'),
  validade: Dia.nullish().describe('Hoje ou depois, no fuso horário da conta.'),
  observacao: Texto.nullish(),
  itens: z.array(z.discriminatedUnion('tipo', [NovoItemCatalogo, NovoItemAvulso])).min(1).max(100),
  ...referenciasNovas,
}).strict();

const escrita = (units: number) => (): Cost => ({ units, classe: 'write' });

const createCotacao = defineRoute({
  operationId: 'createCotacao',
  method: 'POST',
  path: '/cotacoes',
  tag: 'Cotações',
  summary: 'Cria uma cotação como rascunho',
  description: 'Criada como rascunho, com o próximo codigo da conta. Um item do catálogo sem '
    + 'preco_unitario_centavos recebe o preço da faixa do canal para a sua quantidade; sem faixa, 422 '
    + 'preco_indisponivel. Aceita referencia_externa e metadados, devolvidos em toda leitura da cotação e levados nos '
    + 'eventos dela. Exige Idempotency-Key. Custa 5 unidades.',
  scope: 'cotacoes:escrever',
  permission: 'cotacoes.editar',
  cost: escrita(5),
  headers: idempotencyHeaders(true),
  idempotency: 'required',
  body: NovaCotacao,
  refusals: [422],
  bodyExample: exemploNovaCotacao,
  responses: {
    201: { description: 'A cotação criada.', schema: Cotacao, headers: replayHeaders, example: { ...exemploCotacao, status: 'rascunho', versao: 1, enviada_em: null, observacao: null } },
  },
  replay: async ({ caller, db }, id) => apresentar(await lerOu404(db, caller.contaId, id)),
  handler: async ({ caller, body, db }) => {
    if (totalConhecido(body.itens) > VALOR_MAXIMO_CENTAVOS) throw totalAcimaDoMaximo();
    const id = await criarCotacao(db, caller.contaId, {
      clienteNome: body.cliente_nome,
      canalId: body.canal_id,
      validade: body.validade,
      observacao: body.observacao,
      referenciaExterna: body.referencia_externa,
      metadados: body.metadados,
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
  summary: 'Muda o status de uma cotação',
  description: 'Permitido: rascunho → enviada | cancelada; enviada → aprovada | recusada | rascunho (uma revisão: '
    + 'versao sobe quando ela é reenviada); recusada → rascunho. Qualquer outra mudança, inclusive para expirada (só '
    + 'a rotina diária expira cotações), é 422 com motivo transicao_invalida. Mudanças simultâneas de uma mesma '
    + 'cotação são aplicadas uma depois da outra. Exige Idempotency-Key. Custa 2 unidades.',
  scope: 'cotacoes:escrever',
  permission: 'cotacoes.editar',
  cost: escrita(2),
  params: PorId,
  headers: idempotencyHeaders(true),
  idempotency: 'required',
  body: z.object({ status: z.enum(STATUS_COTACAO) }).strict(),
  refusals: [422],
  bodyExample: { status: 'aprovada' },
  responses: {
    200: { description: 'A cotação no novo status.', schema: Cotacao, headers: replayHeaders, example: { ...exemploCotacao, status: 'aprovada' } },
  },
  replay: async ({ caller, db }, id) => apresentar(await lerOu404(db, caller.contaId, id)),
  handler: async ({ caller, params, body, db }) => {
    await mudarStatusCotacao(db, caller.contaId, params.id, body.status);
    return { status: 200, body: apresentar(await lerOu404(db, caller.contaId, params.id)), resourceId: params.id };
  },
});

export const rotasDeCotacoes = [listCotacoes, createCotacao, getCotacao, changeCotacaoStatus];
