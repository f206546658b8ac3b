// Webhook endpoints and deliveries, as the application's screen manages them: add, disable and
// re-enable endpoints, rotate a secret, send webhook.teste, list deliveries, attempts and failures,
// replay one event or every failed delivery since a time, and throttle an endpoint.
import { z } from 'zod';
import { listDeliveries, listFailedDeliveries, listAttempts, notifyDeliveriesDue, redeliverFailures } from '#shared/db/delivery-ops.ts';
import { eventExists, replayEvent } from '#shared/db/outbox.ts';
import { setThrottle } from '#shared/db/throttle.ts';
import {
  criarEndpoint,
  desativarEndpoints,
  enviarTeste,
  lerEndpoint,
  listarEndpoints,
  reativarEndpoint,
  rotacionarSegredo,
} from '#shared/db/webhooks.ts';
import { TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { checkUrlHost } from '#shared/ssrf.ts';
import { defineCommand, list, UsageError } from '../command.ts';

const TIPOS = TIPOS_DE_EVENTO.map((t) => t.tipo) as [string, ...string[]];
const url = z.url({ protocol: /^https?$/ }).max(2000);
const desde = z.iso.datetime({ offset: true }).transform((v) => new Date(v));
const limite = z.coerce.number().int().min(1).max(1000).default(50);
const endpointRef = { conta: z.uuid(), endpoint: z.uuid() };

export const webhookCommands = [
  defineCommand({
    name: 'webhooks add',
    summary: 'Register an endpoint created by a user (no --tipos: every type); prints its whsec_ secret.',
    options: z.object({
      conta: z.uuid(),
      usuario: z.uuid(),
      url,
      tipos: list(z.enum(TIPOS)).default([]),
      descricao: z.string().max(200).optional(),
    }),
    run: async (o, { pool, config, out }) => {
      // Names are checked where they resolve, at delivery; an IP literal can be refused now.
      if (!config.WEBHOOK_ALLOW_PRIVATE_NETWORKS) {
        try {
          checkUrlHost(o.url);
        } catch (error) {
          throw new UsageError(`--url: ${(error as Error).message}`);
        }
      }
      out(await criarEndpoint(pool, { contaId: o.conta, usuarioId: o.usuario, url: o.url, tipos: o.tipos, descricao: o.descricao ?? null }));
    },
  }),
  defineCommand({
    name: 'webhooks list',
    summary: 'List the endpoints of an account (never their secrets).',
    options: z.object({ conta: z.uuid() }),
    run: async (o, { pool, out }) => out(await listarEndpoints(pool, o.conta)),
  }),
  defineCommand({
    name: 'webhooks disable',
    summary: 'Disable an endpoint; its deliveries waiting for a retry fail (replay them after re-enabling).',
    options: z.object(endpointRef),
    run: async (o, { pool, out }) => {
      const disabled = await pool.transaction((tx) =>
        desativarEndpoints(tx, [{ contaId: o.conta, endpointId: o.endpoint, motivo: 'operador' }]));
      if (disabled[0]) return out(disabled[0]);
      const endpoint = await lerEndpoint(pool, o.conta, o.endpoint);
      if (!endpoint) throw new UsageError(`no endpoint ${o.endpoint} in account ${o.conta}`);
      out(endpoint);
    },
  }),
  defineCommand({
    name: 'webhooks enable',
    summary: "Re-enable an endpoint (within the plan's limit) with a clean failure record.",
    options: z.object(endpointRef),
    run: async (o, { pool, out }) => {
      const endpoint = await reativarEndpoint(pool, o.conta, o.endpoint);
      if (!endpoint) throw new UsageError(`no endpoint ${o.endpoint} in account ${o.conta}`);
      out(endpoint);
    },
  }),
  defineCommand({
    name: 'webhooks rotate-secret',
    summary: 'Give an endpoint a new secret (printed once); the previous one also signs for 24 hours.',
    options: z.object(endpointRef),
    run: async (o, { pool, out }) => {
      const endpoint = await rotacionarSegredo(pool, o.conta, o.endpoint);
      if (!endpoint) throw new UsageError(`no endpoint ${o.endpoint} in account ${o.conta}`);
      out(endpoint);
    },
  }),
  defineCommand({
    name: 'webhooks throttle',
    summary: 'At most --por-segundo deliveries a second to an endpoint, whatever the workers (off: no limit, the default).',
    options: z.object({ ...endpointRef, porSegundo: z.union([z.literal('off'), z.coerce.number().int().min(1).max(1000)]) }),
    run: async (o, { pool, out }) => {
      const throttle = await setThrottle(pool, o.conta, o.endpoint, o.porSegundo === 'off' ? null : o.porSegundo);
      if (!throttle) throw new UsageError(`no endpoint ${o.endpoint} in account ${o.conta}`);
      out(throttle);
    },
  }),
  defineCommand({
    name: 'webhooks test',
    summary: 'Send webhook.teste to one active endpoint; prints the event id.',
    options: z.object({ ...endpointRef, mensagem: z.string().min(1).max(500).default('Teste de webhook enviado pelo operador.') }),
    run: async (o, { pool, out }) => {
      const endpoint = await lerEndpoint(pool, o.conta, o.endpoint);
      if (!endpoint) throw new UsageError(`no endpoint ${o.endpoint} in account ${o.conta}`);
      if (!endpoint.ativo) throw new UsageError(`endpoint ${o.endpoint} is disabled; enable it first`);
      out({ event_id: await enviarTeste(pool, o.conta, o.endpoint, o.mensagem) });
    },
  }),
  defineCommand({
    name: 'webhooks deliveries',
    summary: 'List deliveries of an account, newest first, with the last attempt (--status pending|succeeded|failed).',
    options: z.object({
      conta: z.uuid(),
      endpoint: z.uuid().optional(),
      evento: z.uuid().optional(),
      status: z.enum(['pending', 'succeeded', 'failed']).optional(),
      limite,
    }),
    run: async (o, { pool, out }) =>
      out(await listDeliveries(pool, { contaId: o.conta, endpointId: o.endpoint, eventId: o.evento, status: o.status, limite: o.limite })),
  }),
  defineCommand({
    name: 'webhooks attempts',
    summary: 'List every attempt of one delivery (status, response code and body, duration, error).',
    options: z.object({ conta: z.uuid(), entrega: z.uuid() }),
    run: async (o, { pool, out }) => out(await listAttempts(pool, o.conta, o.entrega)),
  }),
  defineCommand({
    name: 'webhooks failures',
    summary: 'List failed deliveries since a time (of one account, or all), newest first.',
    options: z.object({ desde, conta: z.uuid().optional(), limite }),
    run: async (o, { pool, out }) => out(await listFailedDeliveries(pool, { desde: o.desde, contaId: o.conta, limite: o.limite })),
  }),
  defineCommand({
    name: 'webhooks replay',
    summary: 'Deliver one event again to every endpoint that should receive it now (same webhook-id).',
    options: z.object({ conta: z.uuid(), evento: z.uuid() }),
    run: async (o, { pool, out }) => {
      if (!(await eventExists(pool, o.conta, o.evento))) throw new UsageError(`no event ${o.evento} in account ${o.conta}`);
      const due = await pool.transaction(async (tx) => {
        const replayed = await replayEvent(tx, o.conta, o.evento);
        await notifyDeliveriesDue(tx);
        return replayed.length;
      });
      out({ event_id: o.evento, deliveries: due });
    },
  }),
  defineCommand({
    name: 'webhooks replay-failed',
    summary: 'Deliver again every delivery that failed since a time (of one account, or all).',
    options: z.object({ desde, conta: z.uuid().optional() }),
    run: async (o, { pool, out }) => {
      const due = await pool.transaction(async (tx) => {
        const count = await redeliverFailures(tx, { desde: o.desde, contaId: o.conta });
        await notifyDeliveriesDue(tx);
        return count;
      });
      out({ deliveries: due });
    },
  }),
];
