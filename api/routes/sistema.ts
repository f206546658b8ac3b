// Routes without a scope: health, the caller's account and key, and the event type catalog.
import { z } from 'zod';
import { lerChave } from '../../shared/db/chaves.ts';
import { lerPlanoDaConta, Plano } from '../../shared/db/contas.ts';
import { sql } from '../../shared/db/pool.ts';
import { ESCOPOS, PERMISSOES } from '../../shared/domain/acesso.ts';
import { TIPOS_DE_EVENTO } from '../../shared/domain/eventos.ts';
import { clock } from '../../shared/clock.ts';
import { defineRoute, type Cost } from './types.ts';

const listaCurta = (): Cost => ({ units: 1, classe: 'read' });
const umRecurso = (): Cost => ({ units: 1, classe: 'read' });

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
  summary: 'Check that the API is up',
  description: 'Answers 200 when the API, its database and the caller\'s key are all working.',
  scope: null,
  permission: null,
  cost: umRecurso,
  responses: {
    200: { description: 'The API is up.', schema: Saude, example: { situacao: 'ok', versao: 'v1', agora: '2026-11-23T14:05:09.112Z' } },
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
  permissoes: z.array(z.enum(PERMISSOES)).describe('Permissions the key\'s creator holds now; the key can do no more than they allow.'),
  limites: Limites,
  uso: z.object({
    mes: z.string().regex(/^\d{4}-\d{2}$/),
    chamadas: z.number().int(),
    restantes: z.number().int(),
  }),
});

const UsoRow = z.object({ nome: z.string(), chamadas: z.number().int() });

const getConta = defineRoute({
  operationId: 'getConta',
  method: 'GET',
  path: '/conta',
  tag: 'Sistema',
  summary: 'View the account, the key and the limits',
  scope: null,
  permission: null,
  cost: umRecurso,
  responses: {
    200: {
      description: 'The account of the key, the key itself, its plan\'s limits and this month\'s use.',
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
        SELECT c.nome, coalesce(u.chamadas, 0) AS chamadas
          FROM contas c
          LEFT JOIN uso_mensal_efetivo u ON u.conta_id = c.id AND u.mes = ${`${mes}-01`}::date
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
  summary: 'List webhook event types',
  description: 'Every event type the service sends, the object its dados names, its fields, and the permission an endpoint\'s creator needs to receive it. The list is short and returned whole (proximo_cursor is always null).',
  scope: null,
  permission: null,
  cost: listaCurta,
  responses: {
    200: {
      description: 'The event types.',
      schema: z.object({ dados: z.array(TipoDeEvento), proximo_cursor: z.null() }),
      example: {
        dados: [
          { tipo: 'cotacao.criada', descricao: 'A quotation is created in the app or through the API.', objeto: 'cotacao', campos: ['id', 'codigo', 'status'], permissao: 'cotacoes.ver' },
          { tipo: 'estoque.movimentado', descricao: 'Entry, exit or adjustment of finished parts; grouped every 60 seconds per variation.', objeto: 'estoque', campos: ['variacao_id', 'local_id', 'tipo'], permissao: 'produtos.ver' },
        ],
        proximo_cursor: null,
      },
    },
  },
  handler: async () => ({
    status: 200,
    body: {
      dados: TIPOS_DE_EVENTO.map(({ tipo, descricao, objeto, campos, permissao }) => ({ tipo, descricao, objeto, campos, permissao })),
      proximo_cursor: null,
    },
  }),
});

export const rotasDoSistema = [getSaude, getConta, getTiposDeEvento];
