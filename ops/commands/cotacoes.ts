// Quotations as the application handles them: the screen (create, send, revise, approve, refuse,
// cancel), the customer's link (open it, ask to close the deal), the daily expiry routine, and the
// anonymization of a customer (data-protection law). Each runs in one transaction declaring its
// origem (tela, link or rotina), so the triggers' events say who made the change.
import { z } from 'zod';
import { anonimizarCliente } from '#shared/db/anonimizacao.ts';
import { abrirLink, linkDaCotacao, pedirFechamento } from '#shared/db/cotacao-link.ts';
import { criarCotacao, lerCotacao, mudarStatusCotacao, type NovoItemCotacao } from '#shared/db/cotacoes.ts';
import { expirarCotacoes } from '#shared/db/cotacoes-expiracao.ts';
import { comOrigem } from '#shared/db/origem.ts';
import type { Pool } from '#shared/db/pool.ts';
import type { StatusCotacao } from '#shared/domain/cotacoes.ts';
import { defineCommand, UsageError, type Command } from '../command.ts';

const booleano = z.enum(['true', 'false']).transform((v) => v === 'true');

const Item = z.discriminatedUnion('tipo', [
  z.object({ tipo: z.literal('catalogo'), variacao_id: z.uuid(), quantidade: z.number().int(), preco_unitario_centavos: z.number().int().optional(), nome: z.string().optional() }),
  z.object({ tipo: z.literal('avulso'), nome: z.string(), quantidade: z.number().int(), preco_unitario_centavos: z.number().int() }),
]);
const Itens = z.string().transform((text, ctx) => {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'not JSON' });
    return z.NEVER;
  }
}).pipe(z.array(Item).min(1));

async function mostrar(pool: Pool, contaId: string, id: string) {
  const cotacao = await lerCotacao(pool, contaId, id);
  if (!cotacao) throw new UsageError(`no quotation ${id} in account ${contaId}`);
  const link = await linkDaCotacao(pool, contaId, id);
  return { ...cotacao, ...link };
}

/** A screen action that moves a quotation to one status. */
const mudarPara = (verb: string, para: StatusCotacao, summary: string): Command => defineCommand({
  name: `cotacoes ${verb}`,
  summary,
  options: z.object({ conta: z.uuid(), cotacao: z.uuid() }),
  run: async (o, { pool, out }) => {
    await comOrigem(pool, 'tela', (tx) => mudarStatusCotacao(tx, o.conta, o.cotacao, para));
    out(await mostrar(pool, o.conta, o.cotacao));
  },
});

export const cotacaoCommands: readonly Command[] = [
  defineCommand({
    name: 'cotacoes create',
    summary: 'Create a draft quotation on the screen; --itens is a JSON array like the API\'s.',
    options: z.object({
      conta: z.uuid(),
      clienteNome: z.string().min(1),
      clienteEmail: z.email().optional(),
      canal: z.uuid().optional(),
      validade: z.iso.date().optional(),
      observacao: z.string().optional(),
      itens: Itens,
    }),
    run: async (o, { pool, out }) => {
      const itens: NovoItemCotacao[] = o.itens.map((i) => i.tipo === 'catalogo'
        ? { tipo: 'catalogo', variacaoId: i.variacao_id, quantidade: i.quantidade, precoUnitarioCentavos: i.preco_unitario_centavos, nome: i.nome }
        : { tipo: 'avulso', nome: i.nome, quantidade: i.quantidade, precoUnitarioCentavos: i.preco_unitario_centavos });
      const id = await comOrigem(pool, 'tela', (tx) => criarCotacao(tx, o.conta, {
        clienteNome: o.clienteNome, clienteEmail: o.clienteEmail, canalId: o.canal, validade: o.validade, observacao: o.observacao, itens,
      }));
      out(await mostrar(pool, o.conta, id));
    },
  }),
  defineCommand({
    name: 'cotacoes show',
    summary: 'Show a quotation with its link token and how many times the customer opened it.',
    options: z.object({ conta: z.uuid(), cotacao: z.uuid() }),
    run: async (o, { pool, out }) => out(await mostrar(pool, o.conta, o.cotacao)),
  }),
  mudarPara('send', 'enviada', 'Send a draft to the customer (versao rises when sent again after a revision).'),
  mudarPara('revise', 'rascunho', 'Take a sent or refused quotation back to draft for a revision.'),
  mudarPara('approve', 'aprovada', 'Approve a sent quotation.'),
  mudarPara('refuse', 'recusada', 'Record that the customer refused a sent quotation.'),
  mudarPara('cancel', 'cancelada', 'Cancel a draft.'),
  defineCommand({
    name: 'cotacoes open-link',
    summary: 'The customer opens the quotation link (counts the opening; emits link.aberto).',
    options: z.object({ token: z.string().min(1) }),
    run: async (o, { pool, out }) => {
      const aberto = await comOrigem(pool, 'link', (tx) => abrirLink(tx, o.token));
      if (!aberto) throw new UsageError('no quotation has this link token');
      out(aberto);
    },
  }),
  defineCommand({
    name: 'cotacoes close-deal',
    summary: 'The customer asks, on the link, to close the deal on a sent quotation (once per version).',
    options: z.object({ token: z.string().min(1), corACombinar: booleano.default(false) }),
    run: async (o, { pool, out }) => {
      const fechamento = await comOrigem(pool, 'link', (tx) => pedirFechamento(tx, o.token, o.corACombinar));
      if (!fechamento) throw new UsageError('no quotation has this link token');
      out(fechamento);
    },
  }),
  defineCommand({
    name: 'cotacoes expire',
    summary: 'Run the daily routine now: sent quotations past their validade become expirada.',
    options: z.object({ conta: z.uuid().optional() }),
    run: async (o, { pool, out }) => out(await expirarCotacoes(pool, o.conta ?? null)),
  }),
  defineCommand({
    name: 'clientes anonymize',
    summary: 'Anonymize a customer (data-protection law) across quotations and orders, found by e-mail, name, a quotation or an order.',
    options: z.object({
      conta: z.uuid(),
      email: z.string().min(1).optional(),
      nome: z.string().min(1).optional(),
      cotacao: z.uuid().optional(),
      pedido: z.uuid().optional(),
    }).refine((o) => o.email ?? o.nome ?? o.cotacao ?? o.pedido, { message: 'give --email, --nome, --cotacao or --pedido' }),
    run: async (o, { pool, out }) =>
      out(await comOrigem(pool, 'tela', (tx) => anonimizarCliente(tx, o.conta, { email: o.email, nome: o.nome, cotacaoId: o.cotacao, pedidoId: o.pedido }))),
  }),
];
