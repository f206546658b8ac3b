// Routes that exist only in tests, to exercise the pipeline itself: a scoped route, a route that
// throws, and a route with a JSON body.
import { z } from 'zod';
import { defineRoute, oneResource } from '../../api/routes/types.ts';

export const SECRET_IN_ERROR = 'segredo-interno-nao-pode-vazar';

export const probeRoutes = [
  defineRoute({
    operationId: 'probeScope',
    method: 'GET',
    path: '/teste/escopo',
    tag: 'Teste',
    summary: 'scoped probe',
    scope: 'pedidos:ler',
    permission: 'producao.ver',
    cost: oneResource,
    responses: { 200: { description: 'ok', schema: z.object({ ok: z.literal(true) }) } },
    handler: async () => ({ status: 200, body: { ok: true } }),
  }),
  defineRoute({
    operationId: 'probeFailure',
    method: 'GET',
    path: '/teste/falha',
    tag: 'Teste',
    summary: 'throws',
    scope: null,
    permission: null,
    cost: oneResource,
    responses: { 200: { description: 'never' } },
    handler: async () => {
      throw new Error(`boom: ${SECRET_IN_ERROR}`);
    },
  }),
  defineRoute({
    operationId: 'probeEcho',
    method: 'POST',
    path: '/teste/eco',
    tag: 'Teste',
    summary: 'echo',
    scope: null,
    permission: null,
    cost: () => ({ units: 2, classe: 'write' }),
    query: z.object({ limite: z.coerce.number().int().min(1).max(100).optional() }).strict(),
    body: z.object({ nome: z.string().min(1).max(10), quantidade: z.number().int().min(1) }).strict(),
    responses: { 201: { description: 'echo', schema: z.object({ nome: z.string(), quantidade: z.number() }) } },
    handler: async ({ body }) => ({ status: 201, body }),
  }),
];
