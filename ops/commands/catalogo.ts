// The catalog as the application's screen edits it: channels, products, variations (minimum and
// multiple), parts, price tiers per channel, materials and colors. Database triggers emit the
// catalog events whoever writes, so these commands emit them too.
import { z } from 'zod';
import { criarCanal } from '#shared/db/canais.ts';
import {
  alterarCanal, alterarParte, lerCanal, alterarProduto, alterarVariacao, criarParte, criarProduto, criarVariacao, definirPrecos,
} from '#shared/db/catalogo.ts';
import { alterarCor, alterarMaterial, criarCor, criarMaterial, TIPOS_MATERIAL } from '#shared/db/materiais.ts';
import { lerProduto } from '#shared/db/produtos.ts';
import { defineCommand, list, UsageError } from '../command.ts';

const booleano = z.enum(['true', 'false']).transform((v) => v === 'true');
const inteiro = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const TIPOS_CANAL = ['loja_propria', 'marketplace', 'atacado', 'outro'] as const;
// A price tier on the command line: <a_partir_de>:<preco_centavos>, e.g. 1:3900,10:3500.
const faixa = z.string().regex(/^\d+:\d+$/, 'use a_partir_de:preco_centavos').transform((s) => {
  const [aPartirDe, precoCentavos] = s.split(':').map(Number);
  return { aPartirDe: aPartirDe ?? 0, precoCentavos: precoCentavos ?? 0 };
});

function found<T>(value: T | null, what: string): T {
  if (value === null) throw new UsageError(`${what} not found in this account`);
  return value;
}

export const catalogoCommands = [
  defineCommand({
    name: 'canais create',
    summary: `Create a sales channel (tipo: ${TIPOS_CANAL.join(', ')}).`,
    options: z.object({ conta: z.uuid(), nome: z.string().min(1), tipo: z.enum(TIPOS_CANAL), taxaPercentualBps: inteiro(0, 10000).optional(), ativo: booleano.optional() }),
    run: async (o, { pool, out }) => {
      const { id } = await criarCanal(pool, o.conta, { nome: o.nome, tipo: o.tipo, taxaPercentualBps: o.taxaPercentualBps, ativo: o.ativo });
      out(await lerCanal(pool, o.conta, id));
    },
  }),
  defineCommand({
    name: 'canais set',
    summary: 'Change a sales channel: name, type, fee (basis points) or active.',
    options: z.object({ conta: z.uuid(), canal: z.uuid(), nome: z.string().min(1).optional(), tipo: z.enum(TIPOS_CANAL).optional(), taxaPercentualBps: inteiro(0, 10000).optional(), ativo: booleano.optional() }),
    run: async (o, { pool, out }) => out(found(await alterarCanal(pool, o.conta, o.canal, o), `channel ${o.canal}`)),
  }),
  defineCommand({
    name: 'produtos create',
    summary: 'Create a product (its variations come next, with variacoes create).',
    options: z.object({ conta: z.uuid(), sku: z.string().min(1), nome: z.string().min(1), descricao: z.string().optional(), ativo: booleano.optional() }),
    run: async (o, { pool, out }) => out(await criarProduto(pool, o.conta, o)),
  }),
  defineCommand({
    name: 'produtos set',
    summary: 'Change a product: sku, name, description or active.',
    options: z.object({ conta: z.uuid(), produto: z.uuid(), sku: z.string().min(1).optional(), nome: z.string().min(1).optional(), descricao: z.string().optional(), ativo: booleano.optional() }),
    run: async (o, { pool, out }) => out(found(await alterarProduto(pool, o.conta, o.produto, o), `product ${o.produto}`)),
  }),
  defineCommand({
    name: 'produtos show',
    summary: 'Show a product as GET /produtos/{id} does: variations, parts and price tiers per channel.',
    options: z.object({ conta: z.uuid(), produto: z.uuid() }),
    run: async (o, { pool, out }) => out(found(await lerProduto(pool, o.conta, o.produto), `product ${o.produto}`).produto),
  }),
  defineCommand({
    name: 'variacoes create',
    summary: 'Add a variation to a product, with the minimum and multiple its stock moves in.',
    options: z.object({
      conta: z.uuid(), produto: z.uuid(), sku: z.string().min(1), nome: z.string().min(1), ativa: booleano.optional(),
      quantidadeMinima: inteiro(1, 99999).optional(), multiplo: inteiro(1, 99999).optional(), posicao: inteiro(0, 100000).optional(),
    }),
    run: async (o, { pool, out }) => out(found(await criarVariacao(pool, o.conta, { ...o, produtoId: o.produto }), `product ${o.produto}`)),
  }),
  defineCommand({
    name: 'variacoes set',
    summary: 'Change a variation: sku, name, active, minimum, multiple or position.',
    options: z.object({
      conta: z.uuid(), variacao: z.uuid(), sku: z.string().min(1).optional(), nome: z.string().min(1).optional(), ativa: booleano.optional(),
      quantidadeMinima: inteiro(1, 99999).optional(), multiplo: inteiro(1, 99999).optional(), posicao: inteiro(0, 100000).optional(),
    }),
    run: async (o, { pool, out }) => out(found(await alterarVariacao(pool, o.conta, o.variacao, o), `variation ${o.variacao}`)),
  }),
  defineCommand({
    name: 'partes create',
    summary: 'Add a part printed separately to a variation.',
    options: z.object({ conta: z.uuid(), variacao: z.uuid(), nome: z.string().min(1), quantidade: inteiro(1, 9999).optional() }),
    run: async (o, { pool, out }) => out(found(await criarParte(pool, o.conta, { ...o, variacaoId: o.variacao }), `variation ${o.variacao}`)),
  }),
  defineCommand({
    name: 'partes set',
    summary: 'Change a part: name or quantity per variation.',
    options: z.object({ conta: z.uuid(), parte: z.uuid(), nome: z.string().min(1).optional(), quantidade: inteiro(1, 9999).optional() }),
    run: async (o, { pool, out }) => out(found(await alterarParte(pool, o.conta, o.parte, o), `part ${o.parte}`)),
  }),
  defineCommand({
    name: 'precos set',
    summary: 'Replace the price tiers of a variation on a channel: --faixas 1:3900,10:3500 (a_partir_de:preco_centavos); empty removes them.',
    options: z.object({ conta: z.uuid(), variacao: z.uuid(), canal: z.uuid(), faixas: list(faixa) }),
    run: async (o, { pool, out }) => {
      const faixas = await pool.transaction((tx) =>
        definirPrecos(tx, o.conta, { variacaoId: o.variacao, canalId: o.canal, faixas: o.faixas }));
      out({ variacao_id: o.variacao, canal_id: o.canal, faixas });
    },
  }),
  defineCommand({
    name: 'materiais create',
    summary: `Create a material (tipo: ${TIPOS_MATERIAL.join(', ')}) with its cost per kg in cents.`,
    options: z.object({ conta: z.uuid(), nome: z.string().min(1), tipo: z.enum(TIPOS_MATERIAL), custoPorKgCentavos: inteiro(0, 100_000_000_000).optional() }),
    run: async (o, { pool, out }) => out(await criarMaterial(pool, o.conta, o)),
  }),
  defineCommand({
    name: 'materiais set',
    summary: 'Change a material: name or cost per kg in cents.',
    options: z.object({ conta: z.uuid(), material: z.uuid(), nome: z.string().min(1).optional(), custoPorKgCentavos: inteiro(0, 100_000_000_000).optional() }),
    run: async (o, { pool, out }) => out(found(await alterarMaterial(pool, o.conta, o.material, o), `material ${o.material}`)),
  }),
  defineCommand({
    name: 'cores create',
    summary: 'Add a color to a material; its supply balance (g or ml) is created with it.',
    options: z.object({
      conta: z.uuid(), material: z.uuid(), nome: z.string().min(1), hex: z.string().regex(/^#[0-9A-Fa-f]{6}$/),
      saldo: inteiro(0, 2_000_000_000).optional(), minimo: inteiro(0, 2_000_000_000).optional(),
    }),
    run: async (o, { pool, out }) => {
      const cor = await pool.transaction((tx) => criarCor(tx, o.conta, { ...o, materialId: o.material }));
      out(found(cor, `material ${o.material}`));
    },
  }),
  defineCommand({
    name: 'cores set',
    summary: 'Change a color: name, hex or active.',
    options: z.object({ conta: z.uuid(), cor: z.uuid(), nome: z.string().min(1).optional(), hex: z.string().regex(/^#[0-9A-Fa-f]{6}$/).optional(), ativa: booleano.optional() }),
    run: async (o, { pool, out }) => out(found(await alterarCor(pool, o.conta, o.cor, o), `color ${o.cor}`)),
  }),
];
