// Routes without a scope: health, the caller's account and key, and the event type catalog.
import { z } from 'zod';
import { lerChave } from '#shared/db/chaves.ts';
import { lerPlanoDaConta, Plano } from '#shared/db/contas.ts';
import { sql } from '#shared/db/pool.ts';
import { ESCOPOS, PERMISSOES } from '#shared/domain/acesso.ts';
import { PRODUTOS_ATE_EVENTOS_POR_PRODUTO, TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { clock } from '#shared/clock.ts';
import type { Cost } from '../admission/cost.ts';
import { conditionalList, listResponses, envelope, fixedListQuery, fixedPage, listCost } from './lists.ts';
import { defineRoute } from './types.ts';

const umRecurso = (): Cost => ({ units: 1, classe: 'read' });
// Checking what is left costs nothing against the month (like GitHub's /rate_limit): a client can
// look before it spends. It still takes a burst token and a read of the minute, like any call.
const gratisNoMes = (): Cost => ({ units: 1, classe: 'read', mes: 0 });

export const Saude = z.object({
  situacao: z.literal('ok'),
  versao: z.literal('v1'),
  agora: z.iso.datetime({ offset: true }),
});

const getSaude = defineRoute({
  operationId: 'getSaude',
  method: 'GET',
  path: '/saude',
  tag: 'Sistema',
  summary: 'Verifica se a API está no ar',
  description: 'Responde 200 quando a API, o banco de dados dela e a chave de quem chama estão funcionando.',
  scope: null,
  permission: null,
  cost: umRecurso,
  responses: {
    200: { description: 'A API está no ar.', schema: Saude, example: { situacao: 'ok', versao: 'v1', agora: '2026-11-23T14:05:09.112Z' } },
  },
  handler: async () => ({
    status: 200,
    body: { situacao: 'ok', versao: 'v1', agora: clock.now().toISOString() },
  }),
});

// Every ceiling of the plan (contract §8.1), as operators set them in planos.
const Limites = Plano.omit({ id: true, nome: true, api_disponivel: true });

export const Conta = z.object({
  id: z.uuid(),
  nome: z.string(),
  plano: z.string(),
  chave: z.object({
    id: z.uuid(),
    nome: z.string(),
    prefixo: z.string(),
    escopos: z.array(z.enum(ESCOPOS)),
    criada_em: z.iso.datetime({ offset: true }),
    expira_em: z.iso.datetime({ offset: true }).nullable(),
  }),
  permissoes: z.array(z.enum(PERMISSOES)).describe('As permissões que quem criou a chave tem agora; a chave não faz mais do que elas permitem.'),
  limites: Limites,
  suspensao: z.object({
    recusas_para_suspender: z.number().int().describe('Recusas seguidas por limite (429) que suspendem a chave.'),
    minutos: z.number().int().describe('Por quanto tempo a chave fica suspensa (403 chave suspensa).'),
    suspensoes_24h: z.number().int().describe('Quantas vezes esta chave foi suspensa nas últimas 24 horas.'),
  }).describe('A regra de suspensão (uma requisição admitida zera a contagem de recusas; veja o [guia](/docs/guia/limites#suspensão)) e as suspensões recentes desta chave.'),
  uso: z.object({
    mes: z.string().regex(/^\d{4}-\d{2}$/),
    chamadas: z.number().int(),
    restantes: z.number().int(),
  }),
});

const UsoRow = z.object({
  nome: z.string(), chamadas: z.number().int(), recusas_para_suspender: z.number().int(), minutos: z.number().int(),
  suspensoes_24h: z.number().int(),
});

const getConta = defineRoute({
  operationId: 'getConta',
  method: 'GET',
  path: '/conta',
  tag: 'Sistema',
  summary: 'Mostra a conta, a chave e os limites',
  description: 'A conta da chave, a própria chave, os tetos do plano ([guia: limites](/docs/guia/limites)), a regra de suspensão (20 recusas '
    + 'seguidas por limite suspendem a chave por 15 minutos; o criador da chave recebe no máximo um e-mail por dia) e o '
    + 'uso do mês. Não custa nada no mês (1 na rajada e 1 leitura no minuto, como toda chamada): consulte antes de gastar.',
  scope: null,
  permission: null,
  cost: gratisNoMes,
  responses: {
    200: {
      description: 'A conta da chave, a própria chave, os limites do plano e o uso deste mês.',
      schema: Conta,
      example: {
        id: '00000000-0000-4000-8000-00000000d3e0',
        nome: 'Oficina Demo 3D',
        plano: 'oficina',
        chave: {
          id: '6f1d2c54-3b0e-4a8c-9e52-0d4f9b7a1c33',
          nome: 'ERP da loja',
          prefixo: 'Xa3kP9qL',
          escopos: ['catalogo:ler', 'estoque:ler', 'estoque:escrever'],
          criada_em: '2026-10-02T12:30:00.000Z',
          expira_em: null,
        },
        permissoes: ['produtos.ver', 'estoque_produtos.ver', 'estoque_produtos.movimentar', 'estoque_insumos.ver'],
        limites: {
          chaves_ativas: 3, webhook_endpoints: 3, leituras_por_minuto: 60, escritas_por_minuto: 20, chamadas_por_mes: 150000,
          rajada: 10, rajada_recarga_por_segundo: 2, simultaneas_por_chave: 3, simultaneas_por_conta: 3, entregas_webhook_por_hora: 1000,
        },
        suspensao: { recusas_para_suspender: 20, minutos: 15, suspensoes_24h: 0 },
        uso: { mes: '2026-11', chamadas: 18452, restantes: 131548 },
      },
    },
  },
  handler: async ({ caller, deps }) => {
    const mes = clock.now().toISOString().slice(0, 7);
    const [plano, chave, uso] = await Promise.all([
      lerPlanoDaConta(deps.pool, caller.contaId),
      lerChave(deps.pool, caller.contaId, caller.chaveId),
      deps.pool.one(sql.type(UsoRow)`
        SELECT c.nome, coalesce(u.calls, 0) AS chamadas, r.refusals AS recusas_para_suspender, r.minutes AS minutos,
               (SELECT count(*)::int FROM suspensions s
                 WHERE s.conta_id = c.id AND s.chave_id = ${caller.chaveId} AND s.started_at > now() - interval '1 day') AS suspensoes_24h
          FROM contas c
          CROSS JOIN suspension_rule() r
          LEFT JOIN effective_monthly_usage u ON u.conta_id = c.id AND u.month = ${`${mes}-01`}::date
         WHERE c.id = ${caller.contaId}`),
    ]);
    if (!chave) throw new Error('admitted key vanished');
    const { id: _id, nome: _nome, api_disponivel: _api, ...limites } = plano;
    return {
      status: 200,
      body: {
        id: caller.contaId,
        nome: uso.nome,
        plano: plano.id,
        chave: {
          id: chave.id,
          nome: chave.nome,
          prefixo: chave.prefixo,
          escopos: chave.escopos,
          criada_em: chave.criada_em,
          expira_em: chave.expira_em,
        },
        permissoes: caller.permissoes,
        limites,
        suspensao: { recusas_para_suspender: uso.recusas_para_suspender, minutos: uso.minutos, suspensoes_24h: uso.suspensoes_24h },
        uso: { mes, chamadas: uso.chamadas, restantes: Math.max(0, plano.chamadas_por_mes - uso.chamadas) },
      },
    };
  },
});

export const TipoDeEvento = z.object({
  tipo: z.string(),
  descricao: z.string(),
  objeto: z.string(),
  campos: z.array(z.string()),
  permissao: z.enum(PERMISSOES).nullable(),
});

const getTiposDeEvento = defineRoute({
  operationId: 'listTiposDeEvento',
  method: 'GET',
  path: '/tipos-de-evento',
  tag: 'Sistema',
  summary: 'Lista os tipos de evento de webhook',
  description: 'Todos os tipos de evento que o serviço envia, com o objeto que o dados de cada um descreve, os campos dele e a permissão que quem criou um endpoint precisa ter para recebê-lo. Pagina como toda lista (limite e cursor); a página padrão traz o catálogo inteiro. '
    + `Uma operação que cria ou altera mais de ${PRODUTOS_ATE_EVENTOS_POR_PRODUTO} produtos envia um único catalogo.atualizado_em_massa no lugar `
    + 'dos produto.criado e produto.atualizado desses produtos: quem assina os eventos de produto deve assinar esse também.',
  scope: null,
  permission: null,
  cost: listCost,
  query: fixedListQuery('tipos-de-evento'),
  ...conditionalList,
  responses: listResponses('Os tipos de evento.', envelope(TipoDeEvento), {
      dados: [
        { tipo: 'cotacao.criada', descricao: 'Uma cotação é criada no aplicativo ou pela API.', objeto: 'cotacao', campos: ['id', 'codigo', 'status'], permissao: 'cotacoes.ver' },
        { tipo: 'estoque.movimentado', descricao: 'Entrada, saída ou ajuste de peças prontas; agrupado a cada 60 segundos por variação.', objeto: 'estoque', campos: ['variacao_id', 'local_id', 'tipo'], permissao: 'produtos.ver' },
      ],
      proximo_cursor: null,
    }),
  handler: async ({ query }) => ({
    status: 200,
    body: fixedPage(TIPOS_DE_EVENTO, query, ({ tipo, descricao, objeto, campos, permissao }) => ({ tipo, descricao, objeto, campos, permissao })),
  }),
});

export const rotasDoSistema = [getSaude, getConta, getTiposDeEvento];
