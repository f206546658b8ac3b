// GET /canais: the account's sales channels. The model of a list route: query schema from
// listQuery, cost from listCost, page from pageClauses/toPage.
import { z } from 'zod';
import { listarCanais, type CanalRow } from '../../shared/db/canais.ts';
import { envelope, listCost, listQuery, toPage } from '../lists.ts';
import { defineRoute } from './types.ts';

export const Canal = z.object({
  id: z.uuid(),
  nome: z.string(),
  tipo: z.enum(['loja_propria', 'marketplace', 'atacado', 'outro']),
  taxa_percentual_bps: z.number().int().min(0).max(10000).describe('Channel fee in basis points (1600 = 16%).'),
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
  summary: 'List sales channels',
  scope: 'catalogo:ler',
  permission: 'produtos.ver',
  cost: listCost,
  query: listQuery,
  responses: { 200: { description: 'A page of channels, oldest first.', schema: envelope(Canal) } },
  handler: async ({ caller, query, db }) => ({
    status: 200,
    body: toPage(await listarCanais(db, caller.contaId, query), query.limite, present),
  }),
});
