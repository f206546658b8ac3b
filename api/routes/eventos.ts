// The event log (issue 19, items 1 and 2): the account's events in the contract's §6.1 envelope the webhooks
// deliver, every delivery attempt of one, and self-service redelivery. A key sees exactly the events
// its creator would receive at an endpoint of their own (contract §6.2's last column, the fan-out's
// own rule: shared/db/outbox.ts); any other id, of another account or not, is 404.
import { z } from 'zod';
import { RETENTION } from '#shared/db/retention.ts';
import { entregasAosDestinos, entregasNestaHora, lerEvento, listarEventos, listarTentativasDoEvento, type EventoRow, type Leitor } from '#shared/db/eventos.ts';
import { notifyDeliveriesDue } from '#shared/db/delivery-ops.ts';
import { replayEvent } from '#shared/db/outbox.ts';
import type { Db } from '#shared/db/pool.ts';
import { lerEndpoint } from '#shared/db/webhooks.ts';
import { montarEnvelope } from '#shared/domain/envelope.ts';
import { TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { dadosInvalidos, naoEncontrado, regraRecusou } from '#shared/errors.ts';
import type { Caller } from '../admission/caller.ts';
import { Instante } from './fields.ts';
import { idempotencyHeaders } from '../writes/idempotency.ts';
import { conditionalList, envelope, listCost, listResponses, toPage, unchangingListQuery } from './lists.ts';
import { replayHeaders } from '../reference/openapi.ts';
import { DataHora, Id, PorId } from './cotacoes-campos.ts';
import { exemploEvento, exemploReenvio, exemploTentativa } from './exemplos.ts';
import { defineRoute } from './types.ts';
import { umRegistro } from './um-registro.ts';

const TIPOS = TIPOS_DE_EVENTO.map((t) => t.tipo) as [string, ...string[]];
const OBJETOS = [...new Set(TIPOS_DE_EVENTO.map((t) => t.objeto))] as [string, ...string[]];

const GUARDA = `Cada evento fica disponível por ${RETENTION.outboxDays} dias depois de registrado e de terminada a última `
  + 'entrega dele (um reenvio renova o prazo); depois disso, 404.';
export const VISIBILIDADE = 'A chave vê exatamente os eventos que um endpoint criado por quem criou a chave receberia: os '
  + 'tipos cuja permissão (a última coluna de /tipos-de-evento) essa pessoa tem agora, e webhook.teste, que não exige '
  + 'nenhuma. O id de um evento de outra conta, de um tipo que a chave não vê ou ainda não registrado é 404. Se essa '
  + 'pessoa for desativada no aplicativo, a chave recebe 403 escopo_insuficiente, como em toda rota com escopo.';

export const Evento = z.object({
  id: Id.describe('Id do evento: o mesmo do cabeçalho webhook-id de toda entrega dele.'),
  tipo: z.enum(TIPOS),
  versao: z.literal('v1'),
  criado_em: DataHora,
  conta_id: Id,
  dados: z.looseObject({ objeto: z.enum(OBJETOS) })
    .describe('Os campos de cada tipo estão em /tipos-de-evento e na seção de webhooks; campos novos podem aparecer sem aviso.'),
  url: z.string().nullable().describe('Endereço do recurso a consultar; null em webhook.teste.'),
}).describe('O envelope do evento ([guia: webhooks](/docs/guia/webhooks#a-entrega)): o mesmo corpo, byte a byte, que as entregas de webhook levam.');

const Tentativa = z.object({
  entrega_id: Id.describe('A entrega (o evento para um endpoint) de que esta tentativa faz parte.'),
  endpoint_id: Id,
  endpoint_descricao: z.string().nullable().describe('A descrição do endpoint, como cadastrada na tela.'),
  tentativa: z.number().int().min(1).describe('O número da tentativa dentro da entrega, a partir de 1; reenvios continuam a contagem.'),
  iniciada_em: DataHora,
  duracao_ms: z.number().int().min(0).nullable()
    .describe('null enquanto a resposta não foi registrada: a tentativa está saindo agora ou foi interrompida (veja erro).'),
  sucesso: z.boolean().describe('Um 2xx em até 10 s.'),
  status_http: z.number().int().nullable().describe('O status que o endpoint respondeu; null quando não houve resposta (veja erro).'),
  erro: z.string().nullable().describe('Por que não houve resposta (tempo esgotado, conexão recusada, endereço não público), como a biblioteca HTTP o descreveu; '
    + '"em andamento…" enquanto a resposta não foi registrada; "interrompida…" quando o worker parou no meio da tentativa (o receptor pode tê-la recebido, e '
    + 'a entrega foi tentada de novo com o mesmo webhook-id); null quando houve resposta.'),
  resposta: z.string().nullable().describe('Os primeiros 4 KB do corpo da resposta, como o serviço os guardou; null sem resposta.'),
});

const Entrega = z.object({
  id: Id.describe('A entrega: o evento para este endpoint.'),
  endpoint_id: Id,
  endpoint_descricao: z.string().nullable(),
  situacao: z.enum(['pendente', 'entregue', 'falhou']),
  proxima_tentativa_em: DataHora.nullable().describe('Quando a próxima tentativa pode sair; null numa entrega terminada.'),
});

const Reenvio = z.object({
  evento_id: Id,
  entregas: z.array(Entrega).describe('As entregas do evento aos endpoints que o recebem: cada uma sai com o webhook-id original.'),
  entregas_por_hora: z.object({
    limite: z.number().int().describe('Entregas de webhook por hora do plano ([guia: limites](/docs/guia/limites)), somando todos os endpoints da conta.'),
    usadas: z.number().int().describe('Entregas feitas nesta hora (UTC), novas tentativas incluídas.'),
  }).describe('Acima do limite, as entregas esperam a hora seguinte; nenhuma se perde.'),
});

const leitor = (caller: Caller): Leitor => ({ contaId: caller.contaId, usuarioId: caller.usuarioId });

const EVENTO_AUSENTE = 'O evento não existe nesta conta, ou a chave não vê eventos deste tipo.';

async function eventoOu404(db: Db, caller: Caller, id: string): Promise<EventoRow> {
  const evento = await lerEvento(db, leitor(caller), id);
  if (!evento) throw naoEncontrado(EVENTO_AUSENTE);
  return evento;
}

const listEventos = defineRoute({
  operationId: 'listEventos',
  method: 'GET',
  path: '/eventos',
  tag: 'Eventos',
  summary: 'Lista os eventos da conta',
  description: 'Do mais novo ao mais antigo, cada um no envelope das entregas de webhook: quem teve o recebedor fora do '
    + 'ar pagina o que perdeu, mesmo sem webhook. Um evento entra na lista quando sai para as entregas (os agrupados, '
    + 'no fim da janela de 60 s). Filtros: tipo, criado_desde, criado_ate; dois ou mais custam 3 unidades, como '
    + `limite acima de 25. ${VISIBILIDADE} ${GUARDA} Escopo eventos:ler.`,
  scope: 'eventos:ler',
  permission: null,
  cost: listCost,
  query: unchangingListQuery('eventos', {
    tipo: z.enum(TIPOS).optional().describe('Só os eventos deste tipo.'),
    criado_desde: Instante.optional().describe('Só os eventos criados a partir deste instante, inclusive.'),
    criado_ate: Instante.optional().describe('Só os eventos criados antes deste instante (exclusive: janelas seguidas não repetem um evento).'),
  }).superRefine((query, ctx) => {
    if (query.criado_desde && query.criado_ate && Date.parse(query.criado_ate) < Date.parse(query.criado_desde)) {
      ctx.addIssue({ code: 'custom', path: ['criado_ate'], message: 'anterior a criado_desde' });
    }
  }),
  ...conditionalList,
  responses: listResponses('Uma página de eventos, do mais novo ao mais antigo.', envelope(Evento), { dados: [exemploEvento], proximo_cursor: null }),
  handler: async ({ caller, query, db, deps }) => {
    const rows = await listarEventos(db, leitor(caller), query);
    return { status: 200, body: toPage(rows, query, ({ cursor_ts: _c, ...row }) => montarEnvelope(deps.config.baseUrl, row)) };
  },
});

const getEvento = defineRoute({
  operationId: 'getEvento',
  method: 'GET',
  path: '/eventos/{id}',
  tag: 'Eventos',
  summary: 'Mostra um evento',
  description: `O evento no envelope das entregas de webhook (o mesmo corpo, byte a byte). ${VISIBILIDADE} ${GUARDA} `
    + 'Um evento não muda depois de registrado: o ETag dele vale para sempre, e um If-None-Match com ele é um 304. Escopo eventos:ler.',
  scope: 'eventos:ler',
  permission: null,
  ...umRegistro({
    // An event has one version, so its ETag never goes stale
    // (docs/decisions/0037-event-log-and-redelivery.md).
    conditional: { tabela: 'outbox' }, descricao: 'O evento.', schema: Evento, exemplo: exemploEvento,
    ler: (db, _contaId, id, caller) => lerEvento(db, leitor(caller), id), ausente: EVENTO_AUSENTE, visivelPorChamador: true,
    versao: () => 1, apresentar: (evento, _caller, deps) => montarEnvelope(deps.config.baseUrl, evento),
  }),
});

const listEntregas = defineRoute({
  operationId: 'listEventoEntregas',
  method: 'GET',
  path: '/eventos/{id}/entregas',
  tag: 'Eventos',
  summary: 'Lista as tentativas de entrega de um evento',
  description: 'Toda tentativa de entregar o evento aos endpoints da conta (inclusive os desativados depois), da mais '
    + 'nova à mais antiga: o endpoint, o número da tentativa, quando começou, quanto durou, o status HTTP ou o erro e os '
    + 'primeiros 4 KB da resposta, como o serviço os guarda. Nunca o segredo nem o endereço do endpoint. Pagina como '
    + `toda lista (limite e cursor; acima de 25, 3 unidades). ${VISIBILIDADE} Escopo eventos:ler.`,
  scope: 'eventos:ler',
  permission: null,
  cost: listCost,
  params: PorId,
  query: unchangingListQuery('eventos-entregas'),
  ...conditionalList,
  responses: listResponses('Uma página de tentativas, da mais nova à mais antiga.', envelope(Tentativa), { dados: [exemploTentativa], proximo_cursor: null }),
  handler: async ({ caller, params, query, db }) => {
    const evento = await eventoOu404(db, caller, params.id);
    const rows = await listarTentativasDoEvento(db, caller.contaId, evento.id, query);
    if (!rows) throw dadosInvalidos('A requisição tem dados inválidos; veja erros.', [{ campo: 'cursor', mensagem: CURSOR_DE_OUTRO_EVENTO }]);
    return { status: 200, body: toPage(rows, query, ({ id: _id, cursor_ts: _c, ...tentativa }) => tentativa) };
  },
});

const CURSOR_DE_OUTRO_EVENTO = 'cursor inválido: use o proximo_cursor das tentativas deste mesmo evento';

/** The 202's body, and the body of its repetition: the deliveries to the endpoints it reaches, read now. */
async function reenvio(db: Db, caller: Caller, eventoId: string, endpointId: string | undefined) {
  const entregas = await entregasAosDestinos(db, caller.contaId, eventoId, endpointId);
  return { evento_id: eventoId, entregas, entregas_por_hora: await entregasNestaHora(db, caller.contaId) };
}

const SEM_DESTINO = 'Nenhum endpoint ativo da conta recebe este evento: ele precisa assinar o tipo, e quem o criou, ter a permissão do tipo.';

const reenviarEvento = defineRoute({
  operationId: 'reenviarEvento',
  method: 'POST',
  path: '/eventos/{id}/reenviar',
  tag: 'Eventos',
  summary: 'Reenvia um evento aos webhooks',
  description: 'Entrega o evento de novo, com o webhook-id original (o recebedor descarta o que já processou), a cada '
    + 'endpoint ativo da conta que o receberia agora (assina o tipo e quem o criou tem a permissão do tipo), ou só ao '
    + 'endpoint_id indicado. Cada entrega recomeça o calendário de novas tentativas; uma que já está saindo segue como '
    + 'está. As entregas contam no limite de entregas por hora do plano: acima dele, esperam a hora seguinte. '
    + 'Responde 202 com as entregas agendadas. Um endpoint_id de outra conta ou desconhecido é 422 referencia_invalida; '
    + 'um endpoint que não recebe o evento (desativado, sem o tipo, ou cujo criador não tem a permissão), ou nenhum '
    + `endpoint que o receba, é 422 sem_destino. ${VISIBILIDADE} Exige Idempotency-Key. Custa 2 unidades. `
    + 'Escopo eventos:reenviar.',
  scope: 'eventos:reenviar',
  permission: null,
  cost: () => ({ units: 2, classe: 'write' }),
  params: PorId,
  headers: idempotencyHeaders(true),
  idempotency: 'required',
  body: z.object({
    endpoint_id: Id.optional().describe('Só a este endpoint da conta; sem ele, a todos os que recebem o evento.'),
  }).strict(),
  bodyExample: { endpoint_id: exemploReenvio.entregas[0]?.endpoint_id },
  refusals: [422],
  responses: {
    202: { description: 'As entregas agendadas; saem em instantes, dentro do limite por hora.', schema: Reenvio, headers: replayHeaders, example: exemploReenvio },
  },
  replay: async ({ caller, body, db }, id) => reenvio(db, caller, id, body.endpoint_id),
  handler: async ({ caller, params, body, db }) => {
    const evento = await eventoOu404(db, caller, params.id);
    if (body.endpoint_id !== undefined && !(await lerEndpoint(db, caller.contaId, body.endpoint_id))) {
      throw regraRecusou('referencia_invalida', 'endpoint_id: o endpoint não existe nesta conta.');
    }
    const feitas = await replayEvent(db, caller.contaId, evento.id, { endpointId: body.endpoint_id });
    const resposta = await reenvio(db, caller, evento.id, body.endpoint_id);
    if (resposta.entregas.length === 0) {
      throw regraRecusou('sem_destino', body.endpoint_id === undefined ? SEM_DESTINO
        : 'endpoint_id: o endpoint não recebe este evento: está desativado, não assina o tipo, ou quem o criou não tem a permissão do tipo.');
    }
    if (feitas.length > 0) await notifyDeliveriesDue(db);
    return { status: 202, body: resposta, resourceId: evento.id };
  },
});

export const rotasDeEventos = [listEventos, getEvento, listEntregas, reenviarEvento];
