// The hot path's functions (admission, the Idempotency-Key's claim, a batch of movements) find every
// row by key with an index, whatever the statistics said when a connection first planned them. A
// connection plans a statement once; planned while a table was small, it was a sequential scan, kept
// as the table grew (measured: 90 million rows read by the key's claim in a 15 s benchmark).
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { bodyHash } from '../api/idempotency.ts';
import { movimentoDoLote, movimentosEmLote, type MovimentoPedido } from '../shared/db/estoque.ts';
import { createDatabasePool, sql, type Pool } from '../shared/db/pool.ts';
import { criarProdutoCompleto, definirSaldo } from './helpers/catalogo.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { admitBatch } from './helpers/limits.ts';

const test = suite('hot-path lookups by index');
let db: TestDatabase;
/** One connection: the one whose plans are judged. */
let one: Pool;
let conta: TestAccount;
let variacao: string;
let sku: string;
let skuDoProduto: string;

test.before(async () => {
  db = await createTestDatabase();
  conta = await createAccount(db.pool);
  await db.pool.query(sql.unsafe`UPDATE planos SET rajada = 1000 WHERE id = 'farm'`);
  const produto = await criarProdutoCompleto(db.pool, conta.contaId, { variacoes: [{}] });
  variacao = produto.variacoes[0]?.id ?? '';
  sku = produto.variacoes[0]?.sku ?? '';
  skuDoProduto = produto.sku;
  await definirSaldo(db.pool, conta.contaId, variacao, 1000);
  // Statistics of small tables, as a new installation has them: a sequential scan is the cheapest
  // plan for any of them.
  await db.pool.query(sql.unsafe`ANALYZE`);
  one = await createDatabasePool(db.url, { size: 1, statementTimeoutMs: 30_000, applicationName: 'test-plans' });
});
test.after(async () => {
  await one.end();
  await db.close();
});

const TABLES = ['chaves_api', 'contas', 'usuarios', 'planos', 'rate_buckets', 'minute_windows', 'uso_mensal', 'month_advances',
  'request_slots', 'idempotency_keys', 'produtos', 'variacoes', 'locais', 'estoque_saldos', 'estoque_movimentos', 'outbox'];

/** Sequential scans of each table so far, with the judged connection's counts flushed first. */
async function seqScans(): Promise<Record<string, number>> {
  await one.query(sql.unsafe`SELECT pg_stat_force_next_flush()`);
  await one.query(sql.unsafe`SELECT 1`);
  const rows = await db.pool.any(sql.type(z.object({ relname: z.string(), seq_scan: z.number() }))`
    SELECT relname::text, seq_scan FROM pg_stat_user_tables WHERE relname = ANY (${sql.array(TABLES, 'text')})`);
  return Object.fromEntries(rows.map((r) => [r.relname, r.seq_scan]));
}

// By id, by a variation's SKU or by its product's (estoque_variacao_do_sku): every lookup by key.
const movimento = (por: { variacao_id: string } | { sku: string } = { variacao_id: variacao }): MovimentoPedido => {
  const body = { tipo: 'saida' as const, ...por, quantidade: 1, motivo: 'venda_loja' as const };
  return { ...body, contaId: conta.contaId, chaveId: conta.chaveId, chave: { key: randomUUID(), route: 'postEstoqueMovimento', hash: bodyHash(body) } };
};

test('admission and a batch of movements with their keys read no table sequentially', async () => {
  const before = await seqScans();
  for (let i = 0; i < 10; i++) {
    // Alone (api_admit_one) and in a batch of two (api_admit_many), each giving back the slots the
    // one before took.
    const slot = { contaId: conta.contaId, chaveId: conta.chaveId };
    const [admitted] = await admitBatch(one, [{ token: conta.token, custo: 2, classe: 'escrita' }], { release: i > 0 ? [slot, slot] : [] });
    assert.is(admitted?.outcome, 'ok');
    const pair = await admitBatch(one, [{ token: conta.token }, { token: conta.token }], { release: [slot] });
    assert.equal(pair.map((r) => r.outcome), ['ok', 'ok']);
    const json = await one.oneFirst(sql.type(z.object({ j: z.string() }))`
      SELECT (${movimentosEmLote([movimento(), movimento({ sku }), movimento({ sku: skuDoProduto }), movimento()])})::text AS j`);
    const answers = JSON.parse(json) as unknown[];
    assert.ok(answers.every((a) => movimentoDoLote(a).status_code === 201));
  }
  const after = await seqScans();
  const scanned = TABLES.filter((t) => (after[t] ?? 0) > (before[t] ?? 0)).map((t) => `${t} (${(after[t] ?? 0) - (before[t] ?? 0)})`);
  assert.equal(scanned, [], `read sequentially: ${scanned.join(', ')}`);
});

test.run();
