// Routes that exist only in tests, to exercise the pipeline itself: a scoped route, a route that
// throws, and a route with a JSON body.
import { z } from 'zod';
import { oneResource } from '../../api/admission/cost.ts';
import { defineRoute } from '../../api/routes/types.ts';
import { sql } from '#shared/db/pool.ts';
import { criarCanal } from '#shared/db/canais.ts';
import { naoEncontrado, regraRecusou } from '#shared/errors.ts';
import { conditionalHeaders, conditionalReply, etagFor } from '../../api/http/etag.ts';
import { idempotencyHeaders } from '../../api/writes/idempotency.ts';

export const SECRET_IN_ERROR = 'segredo-interno-nao-pode-vazar';
/** Carried by a request (query and body): no log line may contain it. */
export const SECRET_IN_REQUEST = 'segredo-do-cliente-7f3a';

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
    operationId: 'probeFailingSql',
    method: 'POST',
    path: '/teste/falha-sql',
    tag: 'Teste',
    summary: 'a statement that fails, carrying the values of the request',
    scope: null,
    permission: null,
    cost: () => ({ units: 2, classe: 'write' }),
    query: z.object({ filtro: z.string() }).strict(),
    body: z.object({ segredo: z.string() }).strict(),
    responses: { 200: { description: 'never' } },
    handler: async ({ query, body, db }) => {
      await db.query(sql.unsafe`SELECT funcao_que_nao_existe(${query.filtro}, ${body.segredo})`);
      return { status: 200 };
    },
  }),
  defineRoute({
    operationId: 'probeDomain',
    method: 'POST',
    path: '/teste/dominio',
    tag: 'Teste',
    summary: 'a value the validation let through that the database refuses',
    scope: null,
    permission: null,
    cost: () => ({ units: 2, classe: 'write' }),
    body: z.object({ valor: z.string(), como: z.enum(['int', 'unico']) }).strict(),
    responses: { 200: { description: 'never' } },
    handler: async ({ body, db, caller }) => {
      if (body.como === 'int') await db.query(sql.unsafe`SELECT ${body.valor}::int`);
      else for (let i = 0; i < 2; i++) await db.query(sql.unsafe`INSERT INTO produtos (conta_id, sku, nome) VALUES (${caller.contaId}, ${body.valor}, 'x')`);
      return { status: 200 };
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

/** An idempotent write (creates a channel) and a conditional read (a product's ETag). */
export const mechanismRoutes = [
  defineRoute({
    operationId: 'probeIdempotent',
    method: 'POST',
    path: '/teste/idempotente',
    tag: 'Teste',
    summary: 'creates a channel, idempotently',
    scope: null,
    permission: null,
    cost: () => ({ units: 2, classe: 'write' }),
    headers: idempotencyHeaders(true),
    body: z.object({ nome: z.string().min(1).max(100), esperar_ms: z.number().int().min(0).max(5000).optional() }).strict(),
    idempotency: 'required',
    responses: { 201: { description: 'created', schema: z.object({ id: z.uuid(), nome: z.string() }) } },
    replay: async ({ db, caller }, id) =>
      db.one(sql.unsafe`SELECT id, nome FROM canais WHERE conta_id = ${caller.contaId} AND id = ${id}`),
    handler: async ({ body, db, caller }) => {
      if (body.esperar_ms) await new Promise((resolve) => setTimeout(resolve, body.esperar_ms));
      if (body.nome === 'recusar') throw regraRecusou('saldo_insuficiente', 'recusado de propósito');
      if (body.nome === 'falhar') throw new Error('falha de propósito');
      const { id } = await criarCanal(db, caller.contaId, { nome: body.nome, tipo: 'outro' });
      return { status: 201, body: { id, nome: body.nome }, resourceId: id };
    },
  }),
  defineRoute({
    operationId: 'probeConditional',
    method: 'GET',
    path: '/teste/produtos/{id}',
    tag: 'Teste',
    summary: 'a product with its ETag',
    scope: null,
    permission: null,
    cost: oneResource,
    params: z.object({ id: z.uuid() }),
    headers: conditionalHeaders,
    responses: { 200: { description: 'ok' }, 304: { description: 'not modified' } },
    handler: async ({ params, headers, db, caller }) => {
      const row = await db.maybeOne(sql.type(z.object({ id: z.string(), nome: z.string(), row_version: z.number() }))`
        SELECT id, nome, row_version FROM produtos WHERE conta_id = ${caller.contaId} AND id = ${params.id}`);
      if (!row) throw naoEncontrado();
      return conditionalReply(headers['if-none-match'], etagFor(row.id, row.row_version), () => ({ id: row.id, nome: row.nome }));
    },
  }),
];
