// GET /canais: the account's sales channels. The model of a list route: query schema from
// listQuery, cost from listCost, page from pageClauses/toPage.
import { z } from 'zod';
import { listarCanais, type CanalRow } from '#shared/db/canais.ts';
import { conditionalList, listResponses, envelope, listCost, listQuery, toPage } from './lists.ts';
import { defineRoute } from './types.ts';

export const Canal = z.object({
  id: z.uuid(),
  nome: z.string(),
  tipo: z.enum(['loja_propria', 'marketplace', 'atacado', 'outro']),
  taxa_percentual_bps: z.number().int().min(0).max(10000).describe('Taxa do canal em pontos-base (1600 = 16%).'),
  ativo: z.boolean(),
  criado_em: z.iso.datetime({ offset: true }),
  atualizado_em: z.iso.datetime({ offset: true }),
});

const present = ({ cursor_ts: _c, ...canal }: CanalRow) => canal;

export const listCanais = defineRoute({
  operationId: 'listCanais',
  method: 'GET',
  path: '/canais',
  tag: 'Catálogo',
  summary: 'Lista os canais de venda',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: listCost,
  query: listQuery('canais'),
  ...conditionalList,
  responses: listResponses('Uma página de canais, do mais antigo ao mais novo.', envelope(Canal), {
      dados: [
        { id: '3c9e7a52-1f4b-4d7e-8a21-6b0c5d9e2f11', nome: 'Loja própria', tipo: 'loja_propria', taxa_percentual_bps: 0, ativo: true, criado_em: '2026-03-01T10:00:00.000Z', atualizado_em: '2026-03-01T10:00:00.000Z' },
        { id: '8a1b2c3d-4e5f-4a6b-9c7d-0e1f2a3b4c5d', nome: 'Marketplace', tipo: 'marketplace', taxa_percentual_bps: 1600, ativo: true, criado_em: '2026-03-01T10:02:00.000Z', atualizado_em: '2026-09-14T18:21:07.000Z' },
      ],
      proximo_cursor: 'WyIyMDI2LTAzLTAxIDEwOjAyOjAwKzAwIiwiOGExYjJjM2QtNGU1Zi00YTZiLTljN2QtMGUxZjJhM2I0YzVkIl0',
    }),
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarCanais(db, caller.contaId, query), query, present),
  }),
});
