// POST /estoque/movimentos (contract §4.2): an entry, exit or adjustment of finished parts in the
// account's own location. Body limits and the 2-unit cost are the pipeline's; this route checks
// the body's shape and turns the database's refusals into 422s. The movement, with app.via = 'api',
// its Idempotency-Key's claim and record, is one statement, batched with the others waiting
// (api_estoque_movimentar_lote, api/write-queue.ts).
import { z } from 'zod';
import { MOTIVOS_MOVIMENTO, movimentoDoLote, movimentosEmLote, TIPOS_MOVIMENTO, type Movimentado, type MovimentoPedido, type MovimentoRow } from '../../shared/db/estoque.ts';
import { regraRecusou, type ApiError } from '../../shared/errors.ts';
import { idempotencyHeaders } from '../idempotency.ts';
import { replayHeaders } from '../openapi.ts';
import { exemploMovimento, exemploNovoMovimento } from './exemplos.ts';
import { defineRoute } from './types.ts';

export const QUANTIDADE_MAXIMA = 99_999;
export const OBSERVACAO_MAXIMA = 200;

const body = z.object({
  tipo: z.enum(TIPOS_MOVIMENTO),
  variacao_id: z.uuid(),
  parte_id: z.uuid().nullish().describe('A part of the variation, when its stock is kept per part.'),
  quantidade: z.number().int().min(1).max(QUANTIDADE_MAXIMA).optional().describe('Required for entrada and saida.'),
  contado: z.number().int().min(0).max(QUANTIDADE_MAXIMA).optional()
    .describe('Required for ajuste: the counted balance, which becomes the balance.'),
  motivo: z.enum(MOTIVOS_MOVIMENTO),
  observacao: z.string().max(OBSERVACAO_MAXIMA).optional(),
}).strict().superRefine((b, ctx) => {
  // Each type takes exactly one of quantidade and contado, so a request never means two things.
  const [needed, unwanted] = b.tipo === 'ajuste' ? (['contado', 'quantidade'] as const) : (['quantidade', 'contado'] as const);
  if (b[needed] === undefined) ctx.addIssue({ code: 'custom', path: [needed], message: `obrigatório quando tipo é ${b.tipo}` });
  if (b[unwanted] !== undefined) ctx.addIssue({ code: 'custom', path: [unwanted], message: `não se usa quando tipo é ${b.tipo}` });
});

export const Movimento = z.object({
  id: z.uuid(),
  tipo: z.enum(TIPOS_MOVIMENTO),
  variacao_id: z.uuid(),
  parte_id: z.uuid().nullable(),
  quantidade: z.number().int().describe('entrada and saida: the quantity moved; ajuste: the signed difference to the count.'),
  saldo_antes: z.number().int().min(0),
  saldo_depois: z.number().int().min(0),
  motivo: z.enum(MOTIVOS_MOVIMENTO),
  criado_em: z.iso.datetime({ offset: true }),
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
});

// Details speak only of the caller's own records: another account's variation reads as missing.
function recusa(r: Extract<Movimentado, { ok: false }>): ApiError {
  switch (r.recusa) {
    case 'referencia_invalida':
      return regraRecusou('referencia_invalida', 'A variação ou a parte não existe nesta conta.');
    case 'abaixo_do_minimo':
      return regraRecusou('abaixo_do_minimo', `A variação se movimenta em quantidades de no mínimo ${r.limite}.`);
    case 'fora_do_multiplo':
      return regraRecusou('fora_do_multiplo', `A variação se movimenta em múltiplos de ${r.limite}.`);
    case 'saldo_insuficiente':
      return regraRecusou('saldo_insuficiente', `O saldo é ${r.limite}; a saída não cabe nele.`);
  }
}

export const postMovimento = defineRoute({
  operationId: 'postEstoqueMovimento',
  method: 'POST',
  path: '/estoque/movimentos',
  tag: 'Estoque',
  summary: 'Post an entry, exit or adjustment of parts',
  description:
    'Moves the account\'s own location. An exit above the balance, a reference to a record that is not in the account, ' +
    'or a quantity below the variation\'s minimum or outside its multiple give 422 with motivo. Costs 2 units; a repetition ' +
    'with the same Idempotency-Key and body replays the first answer (1 unit in the burst, 0 in the month).',
  scope: 'estoque:escrever',
  permission: 'estoque_produtos.movimentar',
  cost: () => ({ units: 2, classe: 'write' }),
  headers: idempotencyHeaders(true),
  body,
  idempotency: 'required',
  bodyExample: exemploNovoMovimento,
  responses: {
    201: {
      description: 'The movement made (on a repetition: read again, with Idempotent-Replayed: true).',
      schema: Movimento,
      headers: replayHeaders,
      example: exemploMovimento,
    },
  },
  once: {
    write: { name: 'movimentos', call: (args) => movimentosEmLote(args as MovimentoPedido[]) },
    args: ({ body, caller }, keyed): MovimentoPedido => ({
      ...body, parte_id: body.parte_id ?? undefined, contaId: caller.contaId, chaveId: caller.chaveId, chave: keyed,
    }),
    result: (written) => {
      const r = movimentoDoLote(written);
      return {
        claim: r,
        reply: () => {
          if (r.recusa) throw recusa({ ok: false, recusa: r.recusa, limite: r.limite });
          if (!r.movimento) throw new Error('api_estoque_movimentar answered neither a movement nor a refusal');
          return { status: 201, body: present(r.movimento), resourceId: r.movimento.id };
        },
      };
    },
  },
});
