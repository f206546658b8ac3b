// Stock movements of finished parts in the account's own location.
//
// POST /estoque/movimentos (contract §4.2): an entry, exit or adjustment of one variation, named by
// variacao_id or by sku. Body limits and the 2-unit cost are the pipeline's; this route checks the
// body's shape and turns the database's refusals into 422s. The movement, with app.via = 'api', its
// Idempotency-Key's claim and record, is one statement, batched with the others waiting
// (api_estoque_movimentar, api/writes/write-queue.ts).
//
// POST /estoque/movimentos/lote: up to 100 movements, all or none (api_estoque_movimentar_lote),
// in the pipeline's write transaction; priced 2 units a movement, from its body.
//
// GET /estoque/movimentos and GET /estoque/movimentos/{id}: the history, each movement as POST
// answers it (contract §2.2, with the external references).
import { z } from 'zod';
import {
  campoDoTipo,
  lerMovimento,
  lerMovimentosDoLote,
  listarMovimentos,
  MOTIVOS_MOVIMENTO,
  movimentarVarios,
  movimentoDoLote,
  movimentosEmLote,
  OBSERVACAO_MAXIMA,
  QUANTIDADE_MAXIMA,
  TIPOS_MOVIMENTO,
  type MovimentoPedido,
  type MovimentoPorVariacaoOuSku,
  type MovimentoRow,
  type RecusaDeMovimento,
} from '#shared/db/estoque.ts';
import { ApiError, regraRecusou, type ItemRecusado } from '#shared/errors.ts';
import type { Cost } from '../admission/cost.ts';
import { Instante, referenciasLidas, referenciasNovas, ReferenciaExterna } from './fields.ts';
import { idempotencyHeaders } from '../writes/idempotency.ts';
import { conditionalList, envelope, listCost, listResponses, toPage, unchangingListQuery } from './lists.ts';
import { replayHeaders } from '../reference/openapi.ts';
import { exemploLoteDeMovimentos, exemploMovimento, exemploNovoLote, exemploNovoMovimento } from './exemplos.ts';
import { defineRoute } from './types.ts';
import { umRegistro } from './um-registro.ts';

/** Movements in one POST /estoque/movimentos/lote. */
export const LOTE_MAXIMO = 100;
/** Contract §8.2: a movement costs 2 units; a batch, 2 for each movement it carries. */
export const CUSTO_DO_MOVIMENTO = 2;

/** A SKU as the catalog keeps them (produtos.sku, variacoes.sku): anything else names no record. */
const Sku = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/)
  .describe('Em vez de variacao_id: o SKU da variação, ou o de um produto que tem uma só variação. O SKU de um produto com várias variações é ambíguo: 422 com motivo sku_ambiguo.');

const movimentoPedido = z.object({
  tipo: z.enum(TIPOS_MOVIMENTO),
  variacao_id: z.uuid().optional().describe('A variação movimentada (ou sku: exatamente um dos dois).'),
  sku: Sku.optional(),
  parte_id: z.uuid().nullish().describe('Uma parte da variação, quando o estoque dela é controlado por parte.'),
  quantidade: z.number().int().min(1).max(QUANTIDADE_MAXIMA).optional().describe('Obrigatório em entrada e saida.'),
  contado: z.number().int().min(0).max(QUANTIDADE_MAXIMA).optional()
    .describe('Obrigatório em ajuste: o saldo contado, que passa a ser o saldo.'),
  motivo: z.enum(MOTIVOS_MOVIMENTO),
  observacao: z.string().max(OBSERVACAO_MAXIMA).optional(),
  ...referenciasNovas,
}).strict().superRefine((b, ctx) => {
  // Each type takes exactly one of quantidade and contado, so a request never means two things.
  const { usa: needed, dispensa: unwanted } = campoDoTipo(b.tipo);
  if (b[needed] === undefined) ctx.addIssue({ code: 'custom', path: [needed], message: `obrigatório quando tipo é ${b.tipo}` });
  if (b[unwanted] !== undefined) ctx.addIssue({ code: 'custom', path: [unwanted], message: `não se usa quando tipo é ${b.tipo}` });
  // And the variation is named once.
  if (b.variacao_id === undefined && b.sku === undefined) ctx.addIssue({ code: 'custom', path: ['variacao_id'], message: 'informe variacao_id ou sku' });
  if (b.variacao_id !== undefined && b.sku !== undefined) ctx.addIssue({ code: 'custom', path: ['sku'], message: 'informe variacao_id ou sku, não os dois' });
});

const forWriting = ({ parte_id, ...m }: z.output<typeof movimentoPedido>): MovimentoPorVariacaoOuSku => ({ ...m, parte_id: parte_id ?? undefined });

export const Movimento = z.object({
  id: z.uuid(),
  tipo: z.enum(TIPOS_MOVIMENTO),
  variacao_id: z.uuid(),
  parte_id: z.uuid().nullable(),
  quantidade: z.number().int().describe('entrada e saida: a quantidade movimentada; ajuste: a diferença, com sinal, para a contagem.'),
  saldo_antes: z.number().int().min(0),
  saldo_depois: z.number().int().min(0),
  motivo: z.enum(MOTIVOS_MOVIMENTO),
  criado_em: z.iso.datetime({ offset: true }),
  ...referenciasLidas,
}).strict();

const present = (m: MovimentoRow): z.infer<typeof Movimento> => ({
  id: m.id,
  tipo: m.tipo,
  variacao_id: m.variacao_id,
  parte_id: m.parte_id,
  quantidade: m.quantidade,
  saldo_antes: m.saldo_antes,
  saldo_depois: m.saldo_depois,
  motivo: m.motivo,
  criado_em: m.criado_em,
  referencia_externa: m.referencia_externa,
  metadados: m.metadados,
});

// Details speak only of the caller's own records: another account's variation reads as missing.
function textoDaRecusa(recusa: RecusaDeMovimento, limite: number | null): string {
  switch (recusa) {
    case 'referencia_invalida':
      return 'A variação, o SKU ou a parte não existe nesta conta.';
    case 'sku_ambiguo':
      return `O SKU é de um produto com ${limite} variações; informe o SKU de uma delas, ou variacao_id.`;
    case 'abaixo_do_minimo':
      return `A variação se movimenta em quantidades de no mínimo ${limite}.`;
    case 'fora_do_multiplo':
      return `A variação se movimenta em múltiplos de ${limite}.`;
    case 'saldo_insuficiente':
      return `O saldo é ${limite}; a saída não cabe nele.`;
  }
}

function loteRecusado(recusas: { indice: number; recusa: RecusaDeMovimento; limite: number | null }[], total: number): ApiError {
  const itens: ItemRecusado[] = recusas.map((r) => ({ indice: r.indice, motivo: r.recusa, mensagem: textoDaRecusa(r.recusa, r.limite) }));
  return new ApiError(422, 'saldo_insuficiente',
    `${itens.length === 1 ? 'Um movimento' : `${itens.length} movimentos`} de ${total} ${itens.length === 1 ? 'foi recusado' : 'foram recusados'}; ` +
    'nenhum movimento do lote foi gravado. Veja recusas.', { motivo: 'lote_recusado', recusas: itens });
}

export const postMovimento = defineRoute({
  operationId: 'postEstoqueMovimento',
  method: 'POST',
  path: '/estoque/movimentos',
  tag: 'Estoque',
  summary: 'Registra uma entrada, saída ou ajuste de peças prontas',
  description:
    'Movimenta o local próprio da conta. A variação vem em variacao_id ou em sku (exatamente um dos dois); o SKU de um ' +
    'produto com várias variações é ambíguo (422 com motivo sku_ambiguo). Uma saída acima do saldo, uma referência a um ' +
    'registro que não é da conta, ou uma quantidade abaixo do mínimo da variação ou fora do seu múltiplo dão 422 com motivo. ' +
    'Aceita referencia_externa e metadados, devolvidos em toda leitura do movimento. Escopo estoque:escrever; quem criou a ' +
    'chave precisa da permissão estoque_produtos.movimentar. Custa 2 unidades (escrita); uma repetição com a mesma ' +
    'Idempotency-Key e o mesmo corpo repete a primeira resposta (1 unidade na rajada, 0 no mês).',
  scope: 'estoque:escrever',
  permission: 'estoque_produtos.movimentar',
  cost: () => ({ units: CUSTO_DO_MOVIMENTO, classe: 'write' }),
  headers: idempotencyHeaders(true),
  body: movimentoPedido,
  idempotency: 'required',
  bodyExample: exemploNovoMovimento,
  responses: {
    201: {
      description: 'O movimento feito (numa repetição: lido de novo, com Idempotent-Replayed: true).',
      schema: Movimento,
      headers: replayHeaders,
      example: exemploMovimento,
    },
  },
  once: {
    write: { name: 'movimentos', call: (args) => movimentosEmLote(args as MovimentoPedido[]) },
    args: ({ body, caller }, keyed): MovimentoPedido => ({ ...forWriting(body), contaId: caller.contaId, chaveId: caller.chaveId, chave: keyed }),
    result: (written) => {
      const r = movimentoDoLote(written);
      return {
        claim: r,
        reply: () => {
          if (r.recusa) throw regraRecusou(r.recusa, textoDaRecusa(r.recusa, r.limite));
          if (!r.movimento) throw new Error('api_estoque_movimentar answered neither a movement nor a refusal');
          return { status: 201, body: present(r.movimento), resourceId: r.movimento.id };
        },
      };
    },
  },
});

/** 2 units a movement the body carries (at most 100 counted); a body that is not a batch, what one movement costs. */
function custoDoLote(body: unknown): Cost {
  const movimentos = body !== null && typeof body === 'object' ? (body as { movimentos?: unknown }).movimentos : undefined;
  const n = Array.isArray(movimentos) ? Math.min(Math.max(movimentos.length, 1), LOTE_MAXIMO) : 1;
  return { units: CUSTO_DO_MOVIMENTO * n, classe: 'write', mes: CUSTO_DO_MOVIMENTO * n };
}

const Lote = z.object({ movimentos: z.array(Movimento).describe('Os movimentos feitos, na ordem do pedido.') }).strict();

export const postLoteDeMovimentos = defineRoute({
  operationId: 'postEstoqueMovimentosLote',
  method: 'POST',
  path: '/estoque/movimentos/lote',
  tag: 'Estoque',
  summary: 'Registra até 100 movimentos de peças prontas de uma vez, todos ou nenhum',
  description:
    `De 1 a ${LOTE_MAXIMO} movimentos, cada um como em POST /estoque/movimentos, sob uma só Idempotency-Key. Cada item é ` +
    'julgado como seria sozinho, contra o saldo deixado pelos itens anteriores do lote. Se algum for recusado, nada é ' +
    'gravado: a resposta é 422 com motivo lote_recusado e, em recusas, a posição (indice, a partir de 0) e o motivo de cada ' +
    'item recusado. Escopo estoque:escrever; quem criou a chave precisa da permissão estoque_produtos.movimentar. Custa 2 ' +
    'unidades por movimento no mês; na rajada e nas escritas do minuto, o mesmo até o tamanho da rajada da chave. Cada ' +
    'movimento gera seu estoque.movimentado, como sozinho. Uma repetição com a mesma Idempotency-Key e o mesmo corpo ' +
    'repete a primeira resposta (1 unidade na rajada, 0 no mês).',
  scope: 'estoque:escrever',
  permission: 'estoque_produtos.movimentar',
  cost: () => custoDoLote(undefined),
  costOfBody: custoDoLote,
  headers: idempotencyHeaders(true),
  body: z.object({
    movimentos: z.array(movimentoPedido).min(1).max(LOTE_MAXIMO).describe(`De 1 a ${LOTE_MAXIMO} movimentos, aplicados todos ou nenhum.`),
  }).strict(),
  idempotency: 'required',
  refusals: [422],
  bodyExample: exemploNovoLote,
  responses: {
    201: {
      description: 'Os movimentos feitos (numa repetição: lidos de novo, com Idempotent-Replayed: true).',
      schema: Lote,
      headers: replayHeaders,
      example: exemploLoteDeMovimentos,
    },
  },
  replay: async ({ caller, db }, loteId) => ({ movimentos: (await lerMovimentosDoLote(db, caller.contaId, loteId)).map(present) }),
  handler: async ({ caller, body, db }) => {
    const lote = await movimentarVarios(db, caller.contaId, body.movimentos.map(forWriting));
    if ('recusas' in lote) throw loteRecusado(lote.recusas, body.movimentos.length);
    return { status: 201, body: { movimentos: lote.movimentos.map(present) }, resourceId: lote.lote_id };
  },
});

export const listMovimentos = defineRoute({
  operationId: 'listEstoqueMovimentos',
  method: 'GET',
  path: '/estoque/movimentos',
  tag: 'Estoque',
  summary: 'Lista o histórico de movimentos de peças prontas',
  description:
    'Os movimentos do local próprio da conta (os que a API faz, e os que a tela faz nele), do mais antigo ao mais novo, ' +
    'cada um como POST /estoque/movimentos o devolve. Filtros: variacao_id, sku (de uma variação, ou de um produto: ' +
    'então os de todas as suas variações), tipo, motivo, criado_desde (inclusive), criado_ate (exclusive) e ' +
    'referencia_externa; dois ou mais custam 3 unidades. Escopo estoque:ler; quem criou a chave precisa da permissão ' +
    'estoque_produtos.ver. Um movimento aparece quando a transação que o fez termina, uma fração de segundo depois do ' +
    'seu criado_em: quem acompanha por criado_desde deve recuar alguns segundos.',
  scope: 'estoque:ler',
  permission: 'estoque_produtos.ver',
  cost: listCost,
  query: unchangingListQuery('estoque-movimentos', {
    variacao_id: z.uuid().optional().describe('Só os movimentos desta variação.'),
    sku: Sku.optional().describe('Só os movimentos da variação com este SKU, ou de todas as variações do produto com este SKU.'),
    tipo: z.enum(TIPOS_MOVIMENTO).optional(),
    motivo: z.enum(MOTIVOS_MOVIMENTO).optional(),
    criado_desde: Instante.optional().describe('Só os movimentos feitos a partir deste instante, inclusive.'),
    criado_ate: Instante.optional().describe('Só os movimentos feitos antes deste instante (exclusive).'),
    referencia_externa: ReferenciaExterna.optional().describe('Só os movimentos com esta referencia_externa (igual, letra a letra).'),
  }),
  ...conditionalList,
  responses: listResponses('Uma página de movimentos, do mais antigo ao mais novo.', envelope(Movimento), { dados: [exemploMovimento], proximo_cursor: null }),
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarMovimentos(db, caller.contaId, query), query, ({ cursor_ts: _c, ...m }) => present(m)),
  }),
});

// A movement never changes once made: its tag is that of version 1 for as long as it exists.
const VERSAO_DO_MOVIMENTO = 1;

export const getMovimento = defineRoute({
  operationId: 'getEstoqueMovimento',
  method: 'GET',
  path: '/estoque/movimentos/{id}',
  tag: 'Estoque',
  summary: 'Mostra um movimento de peças prontas',
  description:
    'Um movimento do local próprio da conta, como POST /estoque/movimentos o devolveu. Um movimento não muda: com o ' +
    'ETag recebido em If-None-Match, a resposta é 304 sem corpo, a 1 unidade na rajada e nada no mês. Escopo estoque:ler; ' +
    'quem criou a chave precisa da permissão estoque_produtos.ver.',
  scope: 'estoque:ler',
  permission: 'estoque_produtos.ver',
  ...umRegistro({
    conditional: { tabela: 'estoque_movimentos' }, descricao: 'O movimento.', schema: Movimento, exemplo: exemploMovimento,
    ler: lerMovimento, ausente: 'O movimento não existe nesta conta.', versao: () => VERSAO_DO_MOVIMENTO, apresentar: present,
  }),
});
