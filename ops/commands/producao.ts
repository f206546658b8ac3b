// Production as the application's screen handles it: orders from approved quotations, order
// situacao and payment, item situacao and stage, and the account's stages. Each runs in one
// transaction with origem 'tela', so pedido_producao.situacao_mudou says who made the change.
import { z } from 'zod';
import { comOrigem } from '#shared/db/origem.ts';
import { criarPedido } from '#shared/db/pedidos.ts';
import { lerRepresentacao } from '#shared/db/representacoes.ts';
import { PERMISSOES } from '#shared/domain/acesso.ts';
import type { Pool } from '#shared/db/pool.ts';
import {
  criarEtapa,
  listarEtapas,
  mudarEtapaItem,
  mudarPagamento,
  mudarSituacaoItem,
  mudarSituacaoPedido,
  renomearEtapa,
} from '#shared/db/producao.ts';
import { ITEM_PEDIDO_SITUACOES, PAGAMENTO_SITUACOES, PRIORIDADES, SITUACOES_PEDIDO } from '#shared/domain/producao.ts';
import { defineCommand, UsageError, type Command } from '../command.ts';

/** The order as the API represents it to a caller holding every permission, with its version. */
async function mostrar(pool: Pool, contaId: string, id: string) {
  const pedido = await lerRepresentacao(pool, 'pedidos_producao', contaId, id, PERMISSOES);
  if (!pedido) throw new UsageError(`no production order ${id} in account ${contaId}`);
  return { ...JSON.parse(pedido.corpo), versao: pedido.versao };
}

export const producaoCommands: readonly Command[] = [
  defineCommand({
    name: 'pedidos create-from-quotation',
    summary: 'Turn an approved quotation into a customer production order with all its items.',
    options: z.object({
      conta: z.uuid(),
      cotacao: z.uuid(),
      prazo: z.iso.date().optional(),
      prioridade: z.enum(PRIORIDADES).optional(),
    }),
    run: async (o, { pool, out }) => {
      const id = await comOrigem(pool, 'tela', (tx) =>
        criarPedido(tx, o.conta, { tipo: 'cliente', origem: 'cotacao', cotacaoId: o.cotacao, prazo: o.prazo, prioridade: o.prioridade }));
      out(await mostrar(pool, o.conta, id));
    },
  }),
  defineCommand({
    name: 'pedidos show',
    summary: 'Show a production order with its items (valor_centavos included: the screen holds every permission).',
    options: z.object({ conta: z.uuid(), pedido: z.uuid() }),
    run: async (o, { pool, out }) => out(await mostrar(pool, o.conta, o.pedido)),
  }),
  defineCommand({
    name: 'pedidos set-situacao',
    summary: `Move an order: aberto → em_producao | cancelado; em_producao → finalizado | cancelado | aberto (${SITUACOES_PEDIDO.join(', ')}).`,
    options: z.object({ conta: z.uuid(), pedido: z.uuid(), situacao: z.enum(SITUACOES_PEDIDO) }),
    run: async (o, { pool, out }) => {
      await comOrigem(pool, 'tela', (tx) => mudarSituacaoPedido(tx, o.conta, o.pedido, o.situacao));
      out(await mostrar(pool, o.conta, o.pedido));
    },
  }),
  defineCommand({
    name: 'pedidos set-pagamento',
    summary: `Record a payment of a customer order: nao_pago → sinal_pago → pago (${PAGAMENTO_SITUACOES.join(', ')}).`,
    options: z.object({ conta: z.uuid(), pedido: z.uuid(), pagamento: z.enum(PAGAMENTO_SITUACOES) }),
    run: async (o, { pool, out }) => {
      await comOrigem(pool, 'tela', (tx) => mudarPagamento(tx, o.conta, o.pedido, o.pagamento));
      out(await mostrar(pool, o.conta, o.pedido));
    },
  }),
  defineCommand({
    name: 'pedidos set-item-situacao',
    summary: `Finish or withdraw an item: ativo → finalizado | retirado (${ITEM_PEDIDO_SITUACOES.join(', ')}).`,
    options: z.object({ conta: z.uuid(), item: z.uuid(), situacao: z.enum(ITEM_PEDIDO_SITUACOES) }),
    run: async (o, { pool, out }) => {
      const pedidoId = await comOrigem(pool, 'tela', (tx) => mudarSituacaoItem(tx, o.conta, o.item, o.situacao));
      out(await mostrar(pool, o.conta, pedidoId));
    },
  }),
  defineCommand({
    name: 'pedidos set-item-etapa',
    summary: 'Move an item to a stage (by name or id); --etapa none takes it out of every stage.',
    options: z.object({ conta: z.uuid(), item: z.uuid(), etapa: z.string().min(1) }),
    run: async (o, { pool, out }) => {
      const pedidoId = await comOrigem(pool, 'tela', (tx) => mudarEtapaItem(tx, o.conta, o.item, o.etapa === 'none' ? null : o.etapa));
      out(await mostrar(pool, o.conta, pedidoId));
    },
  }),
  defineCommand({
    name: 'etapas list',
    summary: 'List the production stages of an account, in order.',
    options: z.object({ conta: z.uuid() }),
    run: async (o, { pool, out }) => out(await listarEtapas(pool, o.conta)),
  }),
  defineCommand({
    name: 'etapas add',
    summary: 'Add a production stage (at the end unless --ordem is given).',
    options: z.object({ conta: z.uuid(), nome: z.string().min(1).max(100), ordem: z.coerce.number().int().min(0).optional() }),
    run: async (o, { pool, out }) => out(await comOrigem(pool, 'tela', (tx) => criarEtapa(tx, o.conta, o.nome, o.ordem ?? null))),
  }),
  defineCommand({
    name: 'etapas rename',
    summary: 'Rename a stage (orders with items at it get a new ETag).',
    options: z.object({ conta: z.uuid(), etapa: z.uuid(), nome: z.string().min(1).max(100) }),
    run: async (o, { pool, out }) => {
      const etapa = await comOrigem(pool, 'tela', (tx) => renomearEtapa(tx, o.conta, o.etapa, o.nome));
      if (!etapa) throw new UsageError(`no stage ${o.etapa} in account ${o.conta}`);
      out(etapa);
    },
  }),
];
