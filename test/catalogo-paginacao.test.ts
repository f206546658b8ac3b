// Paging through a large catalog while it changes: keyset cursors never skip or repeat a product.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { alterarProduto, alterarVariacao } from '#shared/db/catalogo.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarProdutoCompleto, semLimites } from './helpers/catalogo.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request, type TestResponse } from './helpers/http.ts';

const test = suite('catalog: paging');
let app: TestApp;
let conta: TestAccount;
let produtos: { id: string; variacao_id: string }[];

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool, { plano: 'farm' });
  // 1,000 products with one variation each, made in one statement (as a bulk import would).
  produtos = [...await app.db.pool.many(sql.type(z.object({ id: z.string(), variacao_id: z.string() }))`
    WITH p AS (
      INSERT INTO produtos (conta_id, sku, nome)
      SELECT ${conta.contaId}, 'BULK-' || lpad(n::text, 4, '0'), 'Produto ' || n FROM generate_series(1, 1000) AS n
      RETURNING id, sku)
    INSERT INTO variacoes (conta_id, produto_id, sku, nome)
    SELECT ${conta.contaId}, p.id, p.sku || '-U', 'Única' FROM p
    RETURNING produto_id AS id, id AS variacao_id`)];
});
test.after(async () => app.stop());

async function pageThrough(query: string, during: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  let cursor: string | null = null;
  do {
    const res: TestResponse = await request(`${app.baseUrl}/produtos?${query}${cursor ? `&cursor=${cursor}` : ''}`, { token: conta.token });
    assert.is(res.status, 200, res.text);
    seen.push(...res.body.dados.map((p: { id: string }) => p.id));
    cursor = res.body.proximo_cursor;
    await during();
  } while (cursor);
  return seen;
}

test('paging through 1,000 products while others are updated and created yields each product exactly once', async () => {
  let stop = false;
  let changes = 0;
  // A writer running the whole time: product and variation updates, and new products.
  const writer = (async () => {
    while (!stop) {
      const alvo = produtos[Math.floor(Math.random() * produtos.length)];
      if (!alvo) continue;
      if (changes % 3 === 0) await alterarProduto(app.db.pool, conta.contaId, alvo.id, { nome: `Mudou ${changes}` });
      else if (changes % 3 === 1) await alterarVariacao(app.db.pool, conta.contaId, alvo.variacao_id, { nome: `V ${changes}` });
      else await criarProdutoCompleto(app.db.pool, conta.contaId);
      changes++;
    }
  })();
  const seen = await pageThrough('limite=37', async () => {
    // Between pages, touch products on both sides of the cursor.
    for (const alvo of [produtos[0], produtos[500], produtos[999]]) {
      if (alvo) await alterarProduto(app.db.pool, conta.contaId, alvo.id, { descricao: `toque ${changes}` });
    }
  });
  stop = true;
  await writer;
  assert.ok(changes > 10, `the catalog changed while paging (${changes} changes)`);
  const counts = new Map<string, number>();
  for (const id of seen) counts.set(id, (counts.get(id) ?? 0) + 1);
  for (const { id } of produtos) assert.is(counts.get(id), 1, `product ${id} seen exactly once`);
  assert.is(seen.length, new Set(seen).size, 'no product repeated, new ones included');
});

test('ordem=atualizado_em pages through a quiet catalog once, in the order of change', async () => {
  const seen = await pageThrough('limite=100&ordem=atualizado_em', async () => undefined);
  assert.is(seen.length, new Set(seen).size);
  assert.ok(produtos.every(({ id }) => seen.includes(id)));
  const order = await app.db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    SELECT id FROM produtos WHERE conta_id = ${conta.contaId} ORDER BY atualizado_em, id`);
  assert.equal(seen, [...order]);
});

test.run();
