// The catalog documents a web process holds (api/routes/document-cache.ts): held by product and version,
// least recently used out first within the bytes allowed; a page sends a held document only at the
// version PostgreSQL names for it, and a product that changes or goes between the page's two
// statements shows at its new version or not at all.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { DocumentCache, paginaDeDocumentos } from '../api/routes/document-cache.ts';
import { alterarProduto } from '#shared/db/catalogo.ts';
import { sql, type Db } from '#shared/db/pool.ts';
import { criarProdutoCompleto, type ProdutoFixture } from './helpers/catalogo.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';

const test = suite('catalog: documents held by the web process');
let db: TestDatabase;
let conta: TestAccount;
let produtos: ProdutoFixture[];

test.before(async () => {
  db = await createTestDatabase();
  conta = await createAccount(db.pool);
  produtos = [];
  for (let i = 0; i < 4; i++) produtos.push(await criarProdutoCompleto(db.pool, conta.contaId));
});
test.after(async () => db.close());

const documento = async (id: string) =>
  String(await db.pool.oneFirst(sql.unsafe`SELECT documento FROM produtos WHERE conta_id = ${conta.contaId} AND id = ${id}`));

/** The pool, with `between` run once after the page's first statement (an interleaving, on the real database). */
function withBetween(between: () => Promise<unknown>): Db {
  let ran = false;
  return new Proxy(db.pool, {
    get(target, name, receiver) {
      if (name !== 'any') return Reflect.get(target, name, receiver);
      return async (...args: Parameters<Db['any']>) => {
        const rows = await target.any(...args);
        if (!ran) {
          ran = true;
          await between();
        }
        return rows;
      };
    },
  }) as Db;
}

test('a document is held at one version: another version of the product is not it', () => {
  const cache = new DocumentCache(1024);
  cache.set('c', 'p', 3, '{"v":3}');
  assert.is(cache.get('c', 'p', 3)?.toString(), '{"v":3}');
  assert.is(cache.get('c', 'p', 4), undefined, 'a newer version');
  assert.is(cache.get('c', 'p', 2), undefined, 'an older version');
  assert.is(cache.get('outra', 'p', 3), undefined, 'another account');
  cache.set('c', 'p', 4, '{"v":4}');
  assert.is(cache.get('c', 'p', 3), undefined, 'the new version replaced it');
  assert.equal(cache.usage, { bytes: 7, documents: 1 });
  assert.is(cache.set('c', 'p', 3, '{"v":3}').toString(), '{"v":3}', 'an older version read late is still given back');
  assert.is(cache.get('c', 'p', 4)?.toString(), '{"v":4}', 'and the newer one stays held');
  assert.is(cache.get('c', 'p', 3), undefined);
});

test('within its bytes, the least recently used document goes first', () => {
  const cache = new DocumentCache(30);
  cache.set('c', 'a', 1, 'a'.repeat(10));
  cache.set('c', 'b', 1, 'b'.repeat(10));
  cache.set('c', 'c', 1, 'c'.repeat(10));
  assert.ok(cache.get('c', 'a', 1), 'a read: now the most recent');
  cache.set('c', 'd', 1, 'd'.repeat(10));
  assert.is(cache.get('c', 'b', 1), undefined, 'b was the least recent');
  assert.ok(cache.get('c', 'a', 1) && cache.get('c', 'c', 1) && cache.get('c', 'd', 1));
  assert.equal(cache.usage, { bytes: 30, documents: 3 });
  // Bytes, not characters: 'ç' is two.
  cache.set('c', 'e', 1, 'ç'.repeat(10));
  assert.is(cache.usage.bytes, 30);
  assert.is(cache.usage.documents, 2);
  const nenhum = new DocumentCache(0);
  assert.is(nenhum.set('c', 'a', 1, 'abc').toString(), 'abc', 'with no room, the document is still given back');
  assert.equal(nenhum.usage, { bytes: 0, documents: 0 });
});

test('a page sends held documents only at the versions PostgreSQL names, and holds what it read', async () => {
  const cache = new DocumentCache(1024 * 1024);
  const primeira = await paginaDeDocumentos(db.pool, cache, conta.contaId, { limite: 10 });
  assert.is(primeira.documentos.length, 4);
  assert.is(cache.usage.documents, 4);
  const alvo = produtos[1] as ProdutoFixture;
  await alterarProduto(db.pool, conta.contaId, alvo.produtoId, { nome: 'Nome novo' });
  const segunda = await paginaDeDocumentos(db.pool, cache, conta.contaId, { limite: 10 });
  for (const [i, p] of segunda.produtos.entries()) {
    assert.is(segunda.documentos[i]?.toString(), await documento(p.id), `product ${i}: the database's document`);
  }
  assert.match(segunda.documentos[1]?.toString() ?? '', /"nome":"Nome novo"/);
  assert.is(segunda.produtos[1]?.row_version, (primeira.produtos[1]?.row_version ?? 0) + 1);
});

test('a product changed between the page\'s statements shows at its new version, which the page names', async () => {
  const cache = new DocumentCache(1024 * 1024);
  const alvo = produtos[2] as ProdutoFixture;
  const pagina = await paginaDeDocumentos(withBetween(() => alterarProduto(db.pool, conta.contaId, alvo.produtoId, { descricao: 'mudou no meio' })), cache, conta.contaId, { limite: 10 });
  const i = pagina.produtos.findIndex((p) => p.id === alvo.produtoId);
  const atual = Number(await db.pool.oneFirst(sql.unsafe`SELECT row_version FROM produtos WHERE id = ${alvo.produtoId}`));
  assert.is(pagina.produtos[i]?.row_version, atual, 'the version of the document sent');
  assert.match(pagina.documentos[i]?.toString() ?? '', /"descricao":"mudou no meio"/);
  assert.ok(cache.get(conta.contaId, alvo.produtoId, atual), 'held at that version');
});

test('a product deleted between the page\'s statements is left out of it', async () => {
  const cache = new DocumentCache(1024 * 1024);
  const extra = await criarProdutoCompleto(db.pool, conta.contaId);
  const pagina = await paginaDeDocumentos(withBetween(async () => {
    await db.pool.query(sql.unsafe`DELETE FROM partes WHERE conta_id = ${conta.contaId} AND variacao_id IN (SELECT id FROM variacoes WHERE produto_id = ${extra.produtoId})`);
    await db.pool.query(sql.unsafe`DELETE FROM precos WHERE conta_id = ${conta.contaId} AND variacao_id IN (SELECT id FROM variacoes WHERE produto_id = ${extra.produtoId})`);
    await db.pool.query(sql.unsafe`DELETE FROM variacoes WHERE conta_id = ${conta.contaId} AND produto_id = ${extra.produtoId}`);
    await db.pool.query(sql.unsafe`DELETE FROM produtos WHERE conta_id = ${conta.contaId} AND id = ${extra.produtoId}`);
  }), cache, conta.contaId, { limite: 10 });
  assert.is(pagina.produtos.length, 4);
  assert.ok(!pagina.produtos.some((p) => p.id === extra.produtoId));
  assert.is(pagina.documentos.length, pagina.produtos.length);
});

test.run();
