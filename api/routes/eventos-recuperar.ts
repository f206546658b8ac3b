// Recovery by time range (issue 37, item 3; docs/decisions/0043-recovery-by-time-range.md): what a
// receiver that was down missed, scheduled again in one call, by the single redelivery's rules
// (shared/db/recuperacao.ts). Its answer counts what it changed, so a repetition of its
// Idempotency-Key reads the answer kept, not the deliveries again.
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { notifyDeliveriesDue } from '#shared/db/delivery-ops.ts';
import { entregasNestaHora } from '#shared/db/eventos.ts';
import { guardarResposta, lerResposta, RECUPERACAO, recuperar, type FiltroRecuperacao, type Recuperado } from '#shared/db/recuperacao.ts';
import { lerEndpoint } from '#shared/db/webhooks.ts';
import { TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { dadosInvalidos, regraRecusou } from '#shared/errors.ts';
import type { Caller } from '../admission/caller.ts';
import { Instante } from './fields.ts';
import { idempotencyHeaders } from '../writes/idempotency.ts';
import { replayHeaders } from '../reference/openapi.ts';
import { DataHora, Id } from './cotacoes-campos.ts';
import { VISIBILIDADE } from './eventos.ts';
import { exemploPedidoDeRecuperacao, exemploRecuperacao } from './exemplos.ts';
import { defineRoute } from './types.ts';

const TIPOS = TIPOS_DE_EVENTO.map((t) => t.tipo) as [string, ...string[]];
const DIA_MS = 86_400_000;

const Pedido = z.object({
  desde: Instante.describe('Início do intervalo (inclusive), pelo criado_em dos eventos.'),
  ate: Instante.describe(`Fim do intervalo (exclusive), posterior a desde e no máximo ${RECUPERACAO.maxDias} dias depois dele.`),
  tipo: z.enum(TIPOS).optional().describe('Só os eventos deste tipo, como o filtro tipo de GET /eventos.'),
  endpoint_id: Id.optional().describe('Só a este endpoint da conta; sem ele, a todos os que recebem cada evento.'),
  somente_falhas: z.boolean().default(true)
    .describe('true (o padrão): só as entregas que falharam (desistidas, ou esperando nova tentativa depois de uma falha); false: todo evento do intervalo.'),
  simular: z.boolean().default(false).describe('true: responde as mesmas contagens e não agenda nada.'),
}).strict();

const Recuperacao = z.object({
  simulacao: z.boolean().describe('true quando nada foi agendado (simular).'),
  eventos: z.number().int().min(0).describe('Eventos com ao menos uma entrega agendada (ou que teriam, numa simulação).'),
  entregas: z.number().int().min(0).describe('Entregas agendadas: cada uma sai com o webhook-id original.'),
  por_endpoint: z.array(z.object({ endpoint_id: Id, entregas: z.number().int().min(0) }))
    .describe('As entregas agendadas a cada endpoint (uma por evento).'),
  proximo_desde: DataHora.nullable().describe(`null quando o intervalo foi todo tratado. Senão, a chamada parou em ${RECUPERACAO.maxEventos} eventos `
    + '(os mais antigos): repita-a com este valor em desde (e outra Idempotency-Key) para continuar.'),
  entregas_por_hora: z.object({
    limite: z.number().int().describe('Entregas de webhook por hora do plano, somando todos os endpoints da conta.'),
    usadas: z.number().int().describe('Entregas feitas nesta hora (UTC) quando a recuperação foi pedida.'),
  }).describe('Acima do limite, as entregas esperam a hora seguinte; nenhuma se perde.'),
});
type Recuperacao = z.infer<typeof Recuperacao>;

const INTERVALO = `O intervalo é inválido: ate deve ser posterior a desde, e o intervalo pode ter no máximo ${RECUPERACAO.maxDias} dias.`;

/** 400 unless desde < ate ≤ desde + maxDias. */
function conferirIntervalo(desde: string, ate: string): void {
  const dias = (Date.parse(ate) - Date.parse(desde)) / DIA_MS;
  if (dias <= 0) throw dadosInvalidos(INTERVALO, [{ campo: 'ate', mensagem: 'deve ser posterior a desde' }]);
  if (dias > RECUPERACAO.maxDias) {
    throw dadosInvalidos(INTERVALO, [{ campo: 'ate', mensagem: `no máximo ${RECUPERACAO.maxDias} dias depois de desde` }]);
  }
}

/** The counts of the deliveries made due (or that would be), in all and by endpoint. */
function contar(feito: Recuperado): Pick<Recuperacao, 'eventos' | 'entregas' | 'por_endpoint'> {
  const porEndpoint = new Map<string, number>();
  for (const par of feito.pares) porEndpoint.set(par.endpoint_id, (porEndpoint.get(par.endpoint_id) ?? 0) + 1);
  return {
    eventos: new Set(feito.pares.map((p) => p.event_id)).size,
    entregas: feito.pares.length,
    por_endpoint: [...porEndpoint].map(([endpoint_id, entregas]) => ({ endpoint_id, entregas })),
  };
}

type Corpo = z.output<typeof Pedido>;

async function filtroDe(db: Parameters<typeof lerEndpoint>[0], caller: Caller, body: Corpo): Promise<FiltroRecuperacao> {
  conferirIntervalo(body.desde, body.ate);
  if (body.endpoint_id !== undefined && !(await lerEndpoint(db, caller.contaId, body.endpoint_id))) {
    throw regraRecusou('referencia_invalida', 'endpoint_id: o endpoint não existe nesta conta.');
  }
  return { desde: body.desde, ate: body.ate, tipo: body.tipo, endpointId: body.endpoint_id, somenteFalhas: body.somente_falhas };
}

export const recuperarEventos = defineRoute({
  operationId: 'recuperarEventos',
  method: 'POST',
  path: '/eventos/recuperar',
  tag: 'Eventos',
  summary: 'Reenvia os eventos de um intervalo de tempo',
  description: 'Para quando o recebedor ficou fora do ar: agenda de novo, com o webhook-id original, as entregas dos eventos '
    + 'criados entre desde (inclusive) e ate (exclusive), como POST /eventos/{id}/reenviar faria com cada um: aos endpoints '
    + 'ativos da conta que os receberiam agora, ou só ao endpoint_id indicado. Com somente_falhas (o padrão), só as entregas '
    + 'que falharam; com false, todas. Filtra por tipo como GET /eventos. Uma entrega que já está saindo segue como está. '
    + 'As entregas contam no limite por hora do plano: acima dele, esperam a hora seguinte, nenhuma se perde. Com simular, '
    + `responde as mesmas contagens e não agenda nada. O intervalo vai até ${RECUPERACAO.maxDias} dias (mais é 400 dados_invalidos); `
    + `uma chamada trata até ${RECUPERACAO.maxEventos} eventos, os mais antigos, e proximo_desde diz de onde continuar. `
    + `Responde 202 com as contagens. Um endpoint_id de outra conta ou desconhecido é 422 referencia_invalida. ${VISIBILIDADE} `
    + 'Exige Idempotency-Key; a repetição responde as mesmas contagens e não agenda nada. Custa 5 unidades. Escopo eventos:reenviar.',
  scope: 'eventos:reenviar',
  permission: null,
  cost: () => ({ units: 5, classe: 'write' }),
  headers: idempotencyHeaders(true),
  idempotency: 'required',
  body: Pedido,
  bodyExample: exemploPedidoDeRecuperacao,
  refusals: [422],
  responses: {
    202: { description: 'O que foi agendado (ou seria, numa simulação); sai em instantes, dentro do limite por hora.', schema: Recuperacao, headers: replayHeaders, example: exemploRecuperacao },
  },
  replay: async ({ caller, db }, id) => lerResposta(db, caller.contaId, id),
  handler: async ({ caller, body, db }) => {
    const filtro = await filtroDe(db, caller, body);
    const feito = await recuperar(db, { contaId: caller.contaId, usuarioId: caller.usuarioId }, filtro, { simulacao: body.simular });
    const resposta: Recuperacao = {
      simulacao: body.simular, ...contar(feito), proximo_desde: feito.proximoDesde, entregas_por_hora: await entregasNestaHora(db, caller.contaId),
    };
    const id = randomUUID();
    await guardarResposta(db, caller.contaId, id, resposta);
    if (feito.pares.length > 0 && !body.simular) await notifyDeliveriesDue(db);
    return { status: 202, body: resposta, resourceId: id };
  },
});
