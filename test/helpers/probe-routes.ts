// Routes that exist only in tests, to exercise the pipeline itself: a scoped route, a route that
// throws, and a route with a JSON body.
import { z } from 'zod';
import { defineRoute, oneResource } from '../../api/routes/types.ts';
import { sql } from '../../shared/db/pool.ts';

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

/** A route that holds its request for ?ms= milliseconds, counting how many run at once. */
export const slowProbe = { running: 0, maxRunning: 0 };
export const slowRoutes = [
  defineRoute({
    operationId: 'probeSlow',
    method: 'GET',
    path: '/teste/lento',
    tag: 'Teste',
    summary: 'slow',
    scope: null,
    permission: null,
    cost: oneResource,
    query: z.object({ ms: z.coerce.number().int().min(0).max(10_000), db: z.enum(['sim', 'nao']).default('nao') }).strict(),
    responses: { 200: { description: 'ok' } },
    handler: async ({ query, deps }) => {
      slowProbe.running++;
      slowProbe.maxRunning = Math.max(slowProbe.maxRunning, slowProbe.running);
      try {
        if (query.db === 'sim') await deps.pool.query(sql.unsafe`SELECT pg_sleep(${query.ms / 1000})`);
        else await new Promise((resolve) => setTimeout(resolve, query.ms));
      } finally {
        slowProbe.running--;
      }
      return { status: 200, body: { ok: true } };
    },
  }),
  defineRoute({
    operationId: 'probeBilling',
    method: 'GET',
    path: '/teste/cobranca',
    tag: 'Teste',
    summary: 'ends with a billing of its choice',
    scope: null,
    permission: null,
    cost: (q) => ({ units: Number(q.get('custo') ?? 1), classe: q.get('classe') === 'write' ? 'write' : 'read' }),
    query: z.object({ custo: z.coerce.number().int(), classe: z.enum(['read', 'write']).optional(), final: z.enum(['not_modified', 'replay']).or(z.coerce.number().int()) }).strict(),
    responses: { 200: { description: 'ok' }, 304: { description: 'not modified' } },
    handler: async ({ query }) => {
      const billing = typeof query.final === 'number' ? { units: query.final } : query.final;
      return { status: billing === 'not_modified' ? 304 : 200, body: billing === 'not_modified' ? undefined : { ok: true }, billing };
    },
  }),
];
