// Products keep their documents (issue 20, item 5): GET /produtos sends the documents the catalog's
// triggers keep, as PostgreSQL keeps them (or as the web process holds them at the same version). Pages and products are compared, byte for byte, with what
// the per-request builder of before answered (test/helpers/produtos-por-requisicao.ts) and with the
// route's schema; every kind of catalog change must leave every document current, and the check is
// shown to notice a trigger that stopped doing so; the migration's backfill builds what the code does.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { etagForVersions } from '../api/http/etag.ts';
import { routes } from '../api/routes/index.ts';
import type { AnyRoute } from '../api/routes/types.ts';
import { alterarProduto, alterarVariacao, definirPrecos } from '#shared/db/catalogo.ts';
import { sql, type Db, type Pool } from '#shared/db/pool.ts';
import type { FiltrosProdutos } from '#shared/db/produtos.ts';
import { release } from '#shared/db/release.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarCanalDeTeste, criarProdutoCompleto, semLimites, type ProdutoFixture } from './helpers/catalogo.ts';
import { createTestDatabase } from './helpers/db.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { documentosPorRequisicao, paginaPorRequisicao } from './helpers/produtos-por-requisicao.ts';

const test = suite('catalog: stored documents');
let app: TestApp;
let conta: TestAccount;
let canais: string[];
let produtos: ProdutoFixture[];
const rota = routes.find((r) => r.operationId === 'listProdutos') as AnyRoute;
const umProduto = routes.find((r) => r.operationId === 'getProduto') as AnyRoute;

// Text JSON must escape, and text it must not: quotes, backslashes, control characters, accents,
// an emoji, U+2028 and markup.
const NOME_DIFICIL = 'Vaso "lua" \\ barra\tcom\ntab \u0001 ç ã 🖨️ \u2028 </script>';

/** A catalog with what a document can hold, written by the screen's queries and by plain SQL. */
async function catalogo(db: Pool, contaId: string): Promise<{ canais: string[]; produtos: ProdutoFixture[] }> {
  const ids = [await criarCanalDeTeste(db, contaId, 'Loja'), await criarCanalDeTeste(db, contaId, 'Marketplace'), await criarCanalDeTeste(db, contaId, 'Atacado')];
  const feitos: ProdutoFixture[] = [];
  for (let i = 0; i < 30; i++) {
    feitos.push(await criarProdutoCompleto(db, contaId, {
      ativo: i % 7 !== 3,
      variacoes: Array.from({ length: 1 + (i % 3) }, (_, v) => ({ quantidadeMinima: 1 + v, multiplo: 1 + (i % 2), partes: v % 2 ? ['Base', 'Tampa'] : [] })),
      // Tiers given out of order, and not on every channel.
      precos: ids.slice(0, 1 + (i % 3)).map((canalId, c) => ({ canalId, faixas: [[50, 2900 + c], [1, 3900 + i], [10, 3500]] as [number, number][] })),
    }));
  }
  // A document past the row's inline size (compressed or out of line like any large value).
  feitos.push(await criarProdutoCompleto(db, contaId, {
    variacoes: Array.from({ length: 40 }, () => ({ partes: ['Base', 'Cúpula', 'Tampa'] })),
    precos: ids.map((canalId) => ({ canalId, faixas: [[1, 100], [5, 90], [20, 80]] as [number, number][] })),
  }));
  const primeiro = feitos[0] as ProdutoFixture;
  await db.query(sql.unsafe`UPDATE produtos SET nome = ${NOME_DIFICIL}, descricao = NULL WHERE conta_id = ${contaId} AND id = ${primeiro.produtoId}`);
  // Variations and parts shown in the screen's order (posicao), not in the order they were made.
  const segundo = feitos[2] as ProdutoFixture;
  await db.query(sql.unsafe`UPDATE variacoes SET posicao = 10 - posicao, nome = ${NOME_DIFICIL} WHERE conta_id = ${contaId} AND produto_id = ${segundo.produtoId}`);
  await db.query(sql.unsafe`UPDATE partes SET posicao = 10 - posicao WHERE conta_id = ${contaId} AND variacao_id = ${feitos[1]?.variacoes[1]?.id ?? ''}`);
  return { canais: ids, produtos: feitos };
}

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool, { plano: 'farm' });
  ({ canais, produtos } = await catalogo(app.db.pool, conta.contaId));
});
test.after(async () => app.stop());

const get = (path: string) => request(`${app.baseUrl}${path}`, { token: conta.token });

/** The tag a page of these products has: their ids and versions, in the page's order, and its cursor. */
async function tagDasVersoes(pagina: string, cursor: string | null): Promise<string> {
  const ids = (JSON.parse(pagina) as { dados: { id: string }[] }).dados.map((p) => p.id);
  const versoes = new Map((await app.db.pool.any(sql.type(z.object({ id: z.string(), row_version: z.number() }))`
    SELECT id, row_version::float8 AS row_version FROM produtos WHERE conta_id = ${conta.contaId} AND id = ANY(${sql.array(ids, 'uuid')})`))
    .map((r) => [r.id, r.row_version]));
  return etagForVersions(ids.map((id) => `${id}.${versoes.get(id)}`).join(','), `,"proximo_cursor":${JSON.stringify(cursor)}}`);
}

/** Every page of a query, each compared with the old builder's page for the same query and cursor. */
async function conferirPaginas(query: string): Promise<number> {
  let cursor: string | null = null;
  let paginas = 0;
  do {
    const q: string = `${query}${cursor ? `&cursor=${cursor}` : ''}`;
    const res = await get(`/produtos?${q}`);
    assert.is(res.status, 200, `${q}: ${res.text}`);
    const parsed = rota.query?.parse(Object.fromEntries(new URLSearchParams(q))) as FiltrosProdutos & { vinculo: string };
    const antes = await paginaPorRequisicao(app.db.pool, conta.contaId, parsed);
    assert.is(res.text, antes, `${q}: the page the per-request builder answered, byte for byte`);
    assert.is(res.headers.get('etag'), await tagDasVersoes(antes, res.body.proximo_cursor), `${q}: its ETag, from its products' versions`);
    const schema = rota.responses[200]?.schema as z.ZodType;
    assert.ok(schema.safeParse(res.body).success, `${q}: the route's schema`);
    cursor = res.body.proximo_cursor;
    paginas++;
  } while (cursor);
  return paginas;
}

test('a page\'s ETag changes with any product on it, whatever part of it changed, and only then', async () => {
  const path = '/produtos?limite=5';
  const first = await get(path);
  let etag = first.headers.get('etag') ?? '';
  assert.is((await request(`${app.baseUrl}${path}`, { token: conta.token, headers: { 'if-none-match': etag } })).status, 304);
  const [p0, , p2] = first.body.dados as { id: string; variacoes: { id: string }[] }[];
  for (const change of [
    () => alterarProduto(app.db.pool, conta.contaId, p0?.id ?? '', { descricao: 'nova descrição' }),
    () => alterarVariacao(app.db.pool, conta.contaId, p2?.variacoes[0]?.id ?? '', { nome: 'Variação nova' }),
    () => app.db.pool.transaction((tx) => definirPrecos(tx, conta.contaId, { variacaoId: p2?.variacoes[0]?.id ?? '', canalId: canais[0] ?? '', faixas: [{ aPartirDe: 1, precoCentavos: 1234 }] })),
  ]) {
    await change();
    const res = await request(`${app.baseUrl}${path}`, { token: conta.token, headers: { 'if-none-match': etag } });
    assert.is(res.status, 200, 'a page that changed is sent again');
    assert.is.not(res.headers.get('etag'), etag);
    etag = res.headers.get('etag') ?? '';
  }
});

test('a page read again after its products changed sends their new documents, not the ones the process held', async () => {
  const path = '/produtos?limite=6';
  const antes = await get(path);
  const [p0, p1, p2] = antes.body.dados as { id: string; variacoes: { id: string }[] }[];
  await alterarProduto(app.db.pool, conta.contaId, p0?.id ?? '', { nome: 'Renomeado depois de lido' });
  await alterarVariacao(app.db.pool, conta.contaId, p1?.variacoes[0]?.id ?? '', { nome: 'Variação renomeada' });
  await app.db.pool.transaction((tx) => definirPrecos(tx, conta.contaId, { variacaoId: p2?.variacoes[0]?.id ?? '', canalId: canais[1] ?? '', faixas: [{ aPartirDe: 1, precoCentavos: 4321 }] }));
  const depois = await get(path);
  const parsed = rota.query?.parse({ limite: '6' }) as FiltrosProdutos & { vinculo: string };
  assert.is(depois.text, await paginaPorRequisicao(app.db.pool, conta.contaId, parsed), 'the page as the database has it now');
  assert.is.not(depois.text, antes.text);
});

test('sampled pages, every filter and both orders, are what the per-request builder answered and match the schema', async () => {
  const sku = produtos[4]?.variacoes[0]?.sku ?? '';
  const marker = String(await app.db.pool.oneFirst(sql.unsafe`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`));
  await alterarProduto(app.db.pool, conta.contaId, produtos[9]?.produtoId ?? '', { nome: 'Mudou' });
  const queries = [
    'limite=100', 'limite=7', 'limite=1', 'ordem=atualizado_em&limite=9', `sku=${sku}`, `sku=${produtos[5]?.sku}`, 'ativo=false', 'ativo=true&limite=11',
    `canal_id=${canais[2]}&limite=4`, `canal_id=${canais[1]}&ativo=true&ordem=atualizado_em`,
    `atualizado_desde=${encodeURIComponent(marker)}`, `ordem=atualizado_em&atualizado_desde=${encodeURIComponent(marker)}&limite=1`,
    'canal_id=00000000-0000-4000-8000-000000000000',
  ];
  let paginas = 0;
  for (const query of queries) paginas += await conferirPaginas(query);
  assert.ok(paginas > 20, `${paginas} pages compared`);
});

test('a large document is stored like any large value (compressed), and read back the same', async () => {
  const grande = produtos.at(-1) as ProdutoFixture;
  const { guardado, texto } = await app.db.pool.one(sql.type(z.object({ guardado: z.number(), texto: z.number() }))`
    SELECT pg_column_size(documento) AS guardado, octet_length(documento) AS texto FROM produtos WHERE conta_id = ${conta.contaId} AND id = ${grande.produtoId}`);
  assert.ok(texto > 8160 && guardado < texto, `${texto} bytes stored in ${guardado}`);
});

test('GET /produtos/{id} is the same document, for every product', async () => {
  const antes = await documentosPorRequisicao(app.db.pool, conta.contaId);
  assert.is(antes.size, produtos.length);
  for (const [id, texto] of antes) {
    const res = await get(`/produtos/${id}`);
    assert.is(res.text, texto, id);
    assert.ok((umProduto.responses[200]?.schema as z.ZodType).safeParse(res.body).success);
  }
});

/** The products whose stored document is not what the per-request builder makes of them now. */
async function desatualizados(db: Db, contaId: string): Promise<string[]> {
  const guardados = await db.any(sql.type(z.object({ id: z.string(), documento: z.string() }))`
    SELECT id, documento FROM produtos WHERE conta_id = ${contaId}`);
  const agora = await documentosPorRequisicao(db, contaId);
  assert.is(guardados.length, agora.size);
  return guardados.filter((g) => agora.get(g.id) !== g.documento).map((g) => g.id);
}

const documentoDe = async (id: string) => String(await app.db.pool.oneFirst(sql.unsafe`
  SELECT documento FROM produtos WHERE conta_id = ${conta.contaId} AND id = ${id}`));

test('after each kind of catalog change (product, variation, part, price tier, channel) every document is current', async () => {
  const c = conta.contaId;
  const [p1, p2, p3] = [10, 11, 12].map((i) => produtos[i] as ProdutoFixture) as [ProdutoFixture, ProdutoFixture, ProdutoFixture];
  const v1 = p1.variacoes[0]?.id ?? '';
  const [novo] = await app.db.pool.anyFirst(sql.type(z.object({ id: z.string() }))`
    INSERT INTO produtos (conta_id, sku, nome) VALUES (${c}, 'NOVO-DOC', 'Novo') RETURNING id`);
  const novoId = String(novo);
  // Each change, in plain SQL as the screen or an import would write it, and the product it must change.
  const mudancas: [string, string, () => Promise<unknown>][] = [
    ['product updated', p1.produtoId, () => alterarProduto(app.db.pool, c, p1.produtoId, { nome: 'Outro "nome"', ativo: false })],
    ['variation inserted', novoId, () => app.db.pool.query(sql.unsafe`INSERT INTO variacoes (conta_id, produto_id, sku, nome) VALUES (${c}, ${novoId}, 'NOVO-DOC-A', 'A')`)],
    ['variation updated', p1.produtoId, () => alterarVariacao(app.db.pool, c, v1, { nome: 'Renomeada', multiplo: 3, posicao: 99 })],
    ['variation moved to another product', p2.produtoId, () => app.db.pool.query(sql.unsafe`UPDATE variacoes SET produto_id = ${p2.produtoId} WHERE conta_id = ${c} AND id = ${p3.variacoes[0]?.id ?? ''}`)],
    ['part inserted', novoId, () => app.db.pool.query(sql.unsafe`
      INSERT INTO partes (conta_id, variacao_id, nome) SELECT ${c}, id, 'Peça' FROM variacoes WHERE conta_id = ${c} AND sku = 'NOVO-DOC-A'`)],
    ['part updated', novoId, () => app.db.pool.query(sql.unsafe`UPDATE partes SET nome = 'Peça nova', quantidade = 2 WHERE conta_id = ${c} AND nome = 'Peça'`)],
    ['part deleted', novoId, () => app.db.pool.query(sql.unsafe`DELETE FROM partes WHERE conta_id = ${c} AND nome = 'Peça nova'`)],
    ['price tier inserted', novoId, () => app.db.pool.query(sql.unsafe`
      INSERT INTO precos (conta_id, variacao_id, canal_id, a_partir_de, preco_centavos)
      SELECT ${c}, id, ${canais[1] ?? ''}, 1, 1990 FROM variacoes WHERE conta_id = ${c} AND sku = 'NOVO-DOC-A'`)],
    ['price tier updated', p1.produtoId, () => app.db.pool.query(sql.unsafe`UPDATE precos SET preco_centavos = preco_centavos + 1 WHERE conta_id = ${c} AND variacao_id = ${v1}`)],
    ['price tiers replaced', p2.produtoId, () => app.db.pool.transaction((tx) => definirPrecos(tx, c, { variacaoId: p2.variacoes[0]?.id ?? '', canalId: canais[0] ?? '', faixas: [{ aPartirDe: 3, precoCentavos: 7 }] }))],
    ['price tier deleted', novoId, () => app.db.pool.query(sql.unsafe`DELETE FROM precos WHERE conta_id = ${c} AND preco_centavos = 1990`)],
    ['channel reordered', p2.produtoId, () => app.db.pool.query(sql.unsafe`UPDATE canais SET criado_em = criado_em - interval '1 day' WHERE conta_id = ${c} AND id = ${canais[2] ?? ''}`)],
    ['channel deleted with its tiers', p1.produtoId, () => app.db.pool.query(sql.unsafe`DELETE FROM canais WHERE conta_id = ${c} AND id = ${canais[1] ?? ''}`)],
    ['variation deleted', p2.produtoId, () => app.db.pool.query(sql.unsafe`DELETE FROM variacoes WHERE conta_id = ${c} AND produto_id = ${p2.produtoId}`)],
    ['product deleted', novoId, () => app.db.pool.query(sql.unsafe`DELETE FROM produtos WHERE conta_id = ${c} AND id = ${novoId}`)],
  ];
  for (const [nome, alvo, mudar] of mudancas) {
    const antes = await documentoDe(alvo).catch(() => null);
    await mudar();
    assert.equal(await desatualizados(app.db.pool, c), [], `${nome}: every document current`);
    if (nome !== 'product deleted') assert.is.not(await documentoDe(alvo), antes, `${nome}: the product's document changed`);
  }
  assert.is((await get(`/produtos/${novoId}`)).status, 404);
  await conferirPaginas('limite=100');
});

test('the comparison notices a document a trigger left behind', async () => {
  const alvo = produtos[20] as ProdutoFixture;
  const gatilhos = [
    ['precos', 'precos_tocar_produto', sql.unsafe`UPDATE precos SET preco_centavos = 1 WHERE conta_id = ${conta.contaId} AND variacao_id = ${alvo.variacoes[0]?.id ?? ''}`],
    ['variacoes', 'variacoes_tocar_produto', sql.unsafe`UPDATE variacoes SET nome = 'sem gatilho' WHERE conta_id = ${conta.contaId} AND produto_id = ${alvo.produtoId}`],
    ['produtos', 'produtos_documentar', sql.unsafe`UPDATE produtos SET nome = 'sem gatilho' WHERE conta_id = ${conta.contaId} AND id = ${alvo.produtoId}`],
  ] as const;
  // Each in a transaction rolled back by throwing what it found.
  class Visto extends Error {
    ids: string[];
    constructor(ids: string[]) {
      super('rolled back');
      this.ids = ids;
    }
  }
  for (const [tabela, gatilho, mudanca] of gatilhos) {
    const visto = await app.db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`ALTER TABLE ${sql.identifier([tabela])} DISABLE TRIGGER ${sql.identifier([gatilho])}`);
      await tx.query(mudanca);
      throw new Visto(await desatualizados(tx, conta.contaId));
    }).catch((error: unknown) => (error instanceof Visto ? error.ids : Promise.reject(error)));
    assert.equal(visto, [alvo.produtoId], `${gatilho} disabled: the stale document is found`);
  }
  assert.equal(await desatualizados(app.db.pool, conta.contaId), [], 'everything rolled back');
});

test('the backfill of 0012 builds, for rows written before it, the documents the code builds', async () => {
  const db = await createTestDatabase();
  try {
    const outra = await createAccount(db.pool, { plano: 'farm' });
    await catalogo(db.pool, outra.contaId);
    // As before 0012: no column, the migration not applied. The release applies it, then the code.
    await db.pool.query(sql.unsafe`ALTER TABLE produtos DROP COLUMN documento, RESET (toast_tuple_target)`);
    await db.pool.query(sql.unsafe`DELETE FROM schema_migrations WHERE name = '0012_documentos_catalogo.sql'`);
    const versoes = await db.pool.anyFirst(sql.type(z.object({ v: z.number() }))`SELECT row_version::float8 AS v FROM produtos ORDER BY id`);
    assert.equal((await release(db.url)).applied, ['0012_documentos_catalogo.sql']);
    assert.equal(await desatualizados(db.pool, outra.contaId), []);
    assert.is(await db.pool.oneFirst(sql.unsafe`SELECT count(*)::int FROM produtos p WHERE documento IS DISTINCT FROM produto_documento(p)`), 0,
      'the code builds the same documents');
    assert.equal(await db.pool.anyFirst(sql.type(z.object({ v: z.number() }))`SELECT row_version::float8 AS v FROM produtos ORDER BY id`), versoes,
      'the backfill moves no version (no ETag changes)');
  } finally {
    await db.close();
  }
});

test.run();
