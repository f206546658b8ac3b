// The one-record reads' data and requests (bench/reads.bench.ts, bench/telemetry.bench.ts): 200
// accounts with one key each and 5 orders of 3 items each, on a plan raised so nothing is refused,
// and requests rotating over all 1,000 orders and their keys, consecutive requests to different
// accounts.
import { movimentar } from '#shared/db/estoque.ts';
import { sql, type Pool } from '#shared/db/pool.ts';
import { criarCanalDeTeste, criarProdutoCompleto } from '../test/helpers/catalogo.ts';
import { itemAvulso, novaCotacao, novoPedido } from '../test/helpers/cotacoes.ts';
import { createAccount, createPlan } from '../test/helpers/fixtures.ts';

export const ACCOUNTS = 200;
export const ORDERS_PER_ACCOUNT = 5;

/** One account: its key, its orders, and one record of each other kind a GET of one record reads. */
export type Account = { token: string; contaId: string; pedidos: string[]; cotacao: string; produto: string; movimento: string };
/** One order to read, with its account; etag once the sanity pass has read it. */
export type Target = { account: Account; pedido: string; etag?: string };

async function seedAccount(pool: Pool): Promise<Account> {
  // Every permission, custos.ver included: the order is read with its cost field, the larger body.
  const account = await createAccount(pool, { plano: 'bench_reads' });
  const itens = [itemAvulso('Suporte de parede', 2), itemAvulso('Engrenagem 40 dentes', 10), itemAvulso('Tampa com logo', 1)];
  const pedidos: string[] = [];
  for (let i = 0; i < ORDERS_PER_ACCOUNT; i++) {
    pedidos.push(await novoPedido(pool, account.contaId, { itens: itens.map(({ nome, quantidade }) => ({ tipo: 'avulso', nome, quantidade })) }));
  }
  const cotacao = await novaCotacao(pool, account.contaId, { itens });
  const canal = await criarCanalDeTeste(pool, account.contaId);
  const produto = await criarProdutoCompleto(pool, account.contaId, {
    variacoes: [{ partes: ['Base', 'Tampa'] }, { partes: ['Base', 'Tampa'] }, { partes: ['Base', 'Tampa'] }],
    precos: [{ canalId: canal, faixas: [[1, 3900], [10, 3500], [50, 2900]] }],
  });
  const moved = await pool.transaction((tx) => movimentar(tx, account.contaId,
    { tipo: 'ajuste', variacao_id: produto.variacoes[0]?.id ?? '', contado: 100, motivo: 'correcao' }));
  if (!moved.ok) throw new Error(`could not seed a movement: ${moved.recusa}`);
  return { token: account.token, contaId: account.contaId, pedidos, cotacao, produto: produto.produtoId, movimento: moved.movimento.id };
}

/** The plan, the accounts and their records, analyzed; the targets in the order the requests take them. */
export async function seedReads(pool: Pool): Promise<{ accounts: Account[]; targets: Target[] }> {
  await createPlan(pool, 'bench_reads', {
    chaves_ativas: 10, leituras_por_minuto: 100_000_000, escritas_por_minuto: 100_000_000, chamadas_por_mes: 2_000_000_000,
    rajada: 1_000_000, rajada_recarga_por_segundo: 1_000_000, simultaneas_por_chave: 1000, simultaneas_por_conta: 1000,
  });
  const accounts: Account[] = [];
  for (let i = 0; i < ACCOUNTS; i++) accounts.push(await seedAccount(pool));
  // Consecutive requests go to different accounts: the i-th target is account i mod 200's order i div 200.
  const targets: Target[] = [];
  for (let o = 0; o < ORDERS_PER_ACCOUNT; o++) for (const account of accounts) targets.push({ account, pedido: account.pedidos[o] ?? '' });
  await pool.query(sql.unsafe`VACUUM ANALYZE`);
  return { accounts, targets };
}

/** Requests rotating over every target, each with its account's key: `path` gives the URL path. */
export function rotate(targets: readonly Target[], path: (t: Target) => string, headers: (t: Target) => Record<string, string> = () => ({})) {
  let n = 0;
  return (req: Record<string, any>) => {
    const target = targets[n++ % targets.length] as Target;
    return { ...req, path: path(target), headers: { authorization: `Bearer ${target.account.token}`, ...headers(target) } };
  };
}
