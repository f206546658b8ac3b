// Quotation and order fixtures and outbox readers for the cotacoes*/pedidos* suites. Fixtures go
// through the same queries the API and the operator CLI use, inside comOrigem like the CLI.
import { z } from 'zod';
import { criarCotacao, mudarStatusCotacao, type NovaCotacao } from '#shared/db/cotacoes.ts';
import { comOrigem } from '#shared/db/origem.ts';
import { criarPedido, type NovoPedido } from '#shared/db/pedidos.ts';
import { sql, type Db, type Pool } from '#shared/db/pool.ts';
import type { StatusCotacao } from '#shared/domain/cotacoes.ts';

export type Evento = { tipo: string; dados: Record<string, any> };

const EventoRow = z.object({ tipo: z.string(), dados: z.record(z.string(), z.any()) });

/** The account's outbox rows in the order they were written, optionally of some types only. */
export async function eventos(db: Db, contaId: string, ...tipos: string[]): Promise<Evento[]> {
  const rows = await db.any(sql.type(EventoRow)`
    SELECT tipo, dados FROM outbox WHERE conta_id = ${contaId} ORDER BY seq`);
  return tipos.length ? rows.filter((r) => tipos.includes(r.tipo)) : [...rows];
}

/** Events about one quotation or order (by dados.id, or dados.cotacao_id for link.aberto). */
/** The external references of a record made without them, as its events carry them. */
export const SEM_REFERENCIAS = { referencia_externa: null, metadados: {} };

export async function eventosDe(db: Db, contaId: string, id: string): Promise<Evento[]> {
  return (await eventos(db, contaId)).filter((e) => e.dados.id === id || e.dados.cotacao_id === id);
}

/** The highest outbox position now, to read only what a step wrote after it. */
export async function marcaDoOutbox(db: Db): Promise<number> {
  return Number(await db.oneFirst(sql.type(z.object({ seq: z.number() }))`SELECT coalesce(max(seq), 0)::int AS seq FROM outbox`));
}

export async function eventosDesde(db: Db, contaId: string, marca: number): Promise<Evento[]> {
  return [...await db.any(sql.type(EventoRow)`
    SELECT tipo, dados FROM outbox WHERE conta_id = ${contaId} AND seq > ${marca} ORDER BY seq`)];
}

export const itemAvulso = (nome = 'Peça sob medida', quantidade = 2, preco = 1500) =>
  ({ tipo: 'avulso' as const, nome, quantidade, precoUnitarioCentavos: preco });

/** A draft made on the screen, with one free item unless told otherwise. */
export async function novaCotacao(pool: Pool, contaId: string, extra: Partial<NovaCotacao> = {}): Promise<string> {
  return comOrigem(pool, 'tela', (tx) => criarCotacao(tx, contaId, { clienteNome: 'Cliente de Teste', itens: [itemAvulso()], ...extra }));
}

/** Moves a quotation through the screen, step by step (e.g. enviada, aprovada). */
export async function levarA(pool: Pool, contaId: string, id: string, ...passos: StatusCotacao[]): Promise<void> {
  for (const para of passos) await comOrigem(pool, 'tela', (tx) => mudarStatusCotacao(tx, contaId, id, para));
}

export async function cotacaoAprovada(pool: Pool, contaId: string, extra: Partial<NovaCotacao> = {}): Promise<string> {
  const id = await novaCotacao(pool, contaId, extra);
  await levarA(pool, contaId, id, 'enviada', 'aprovada');
  return id;
}

export async function novoPedido(pool: Pool, contaId: string, pedido: Partial<NovoPedido> = {}): Promise<string> {
  return comOrigem(pool, 'tela', (tx) => criarPedido(tx, contaId, {
    tipo: 'cliente',
    origem: 'manual',
    clienteNome: 'Cliente do Pedido',
    valorCentavos: 12345,
    itens: [{ tipo: 'avulso', nome: 'Peça', quantidade: 3 }],
    ...pedido,
  }));
}
