// Validation to the database's domain (issue 17): what PostgreSQL cannot store or read is refused
// with a 400 (or a 422 for a business limit) naming the field, before any statement; and a data
// error that slips through anyway is a 400/422, never a 500. Each case here answered 500 before.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { criarInsumo } from '#shared/db/insumos.ts';
import { sql } from '#shared/db/pool.ts';
import { criarMaterial } from '#shared/db/materiais.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarCanalDeTeste, criarProdutoCompleto, definirSaldo, semLimites } from './helpers/catalogo.ts';
import { novaCotacao, novoPedido } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request, type TestResponse } from './helpers/http.ts';
import { probeRoutes } from './helpers/probe-routes.ts';

const test = suite('input checked to the database domain');
let app: TestApp;
let conta: TestAccount;
let variacao: string;

test.before(async () => {
  app = await startTestApp({ extraRoutes: probeRoutes });
  conta = await createAccount(app.db.pool);
  await semLimites(app.db.pool);
  // Two records in every list, so each has a next page at limite=1.
  const db = app.db.pool;
  for (let i = 0; i < 2; i++) {
    await criarCanalDeTeste(db, conta.contaId);
    const produto = await criarProdutoCompleto(db, conta.contaId);
    variacao = produto.variacoes[0]?.id ?? '';
    await definirSaldo(db, conta.contaId, variacao, 50);
    await criarMaterial(db, conta.contaId, { nome: `PLA ${i}`, tipo: 'filamento' });
    await criarInsumo(db, conta.contaId, { tipo: 'componente', nome: `Parafuso ${i}`, unidade: 'un' });
    await novaCotacao(db, conta.contaId);
    await novoPedido(db, conta.contaId);
  }
});
test.after(async () => app.stop());

const get = (path: string) => request(`${app.baseUrl}${path}`, { token: conta.token });
const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}${path}`, { token: conta.token, body, headers: { 'idempotency-key': randomUUID(), ...headers } });

function refused(res: TestResponse, status: number, campo?: string) {
  assert.is(res.status, status, res.text);
  assert.is(res.headers.get('content-type'), 'application/problem+json; charset=utf-8');
  if (campo) assert.ok(res.body.erros.some((e: { campo: string }) => e.campo === campo), `${campo} in ${res.text}`);
}

const movimento = (extra: Record<string, unknown> = {}) => ({ tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'correcao', ...extra });

test('a NUL character anywhere in the request is 400 naming where', async () => {
  refused(await post('/estoque/movimentos', movimento({ observacao: 'antes\u0000depois' })), 400, 'observacao');
  refused(await post('/cotacoes', { cliente_nome: 'Zé\u0000', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }), 400, 'cliente_nome');
  refused(await post('/cotacoes', { cliente_nome: 'Zé', itens: [{ tipo: 'avulso', nome: 'peça\u0000', quantidade: 1, preco_unitario_centavos: 1 }] }), 400, 'itens[0].nome');
  refused(await get('/produtos?sku=ABC%00'), 400, 'sku');
  refused(await get('/canais?cursor=%00'), 400, 'cursor');
  refused(await get('/produtos/%00'), 400, 'id');
  refused(await post('/teste/eco', { ['no\u0000me']: 'a', quantidade: 1 }), 400, 'corpo');
});

test('a field named __proto__ is 400, not silently dropped (metadados or anywhere else)', async () => {
  const res = await request(`${app.baseUrl}/estoque/movimentos`, {
    token: conta.token, headers: { 'idempotency-key': randomUUID(), 'content-type': 'application/json' },
    rawBody: JSON.stringify(movimento()).replace(/\}$/, ',"metadados":{"__proto__":"x","loja":"y"}}'),
  });
  refused(res, 400, 'metadados');
  assert.match(res.text, '__proto__');
});

test('half a surrogate pair is 400, with or without an Idempotency-Key', async () => {
  refused(await post('/estoque/movimentos', movimento({ observacao: 'x\ud800' })), 400, 'observacao');
  refused(await post('/cotacoes', { cliente_nome: '\udc00', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }), 400, 'cliente_nome');
  // A well-formed pair (an emoji) is text like any other.
  assert.is((await post('/estoque/movimentos', movimento({ observacao: 'ok 🙂' }))).status, 201);
});

test('a body that is not UTF-8 (a Latin-1 ç) is 400 naming the problem; nothing is stored and its key stays free', async () => {
  const semAcento = { cliente_nome: 'Conceicao', itens: [{ tipo: 'avulso', nome: 'Caneca', quantidade: 1, preco_unitario_centavos: 1 }] };
  // The JSON text of "Conceição" in Latin-1: ç is the single byte E7, which UTF-8 never has alone.
  const latin1 = Buffer.from(JSON.stringify({ ...semAcento, cliente_nome: 'Conceição' }), 'latin1');
  const cotacoes = async () => Number(await app.db.pool.oneFirst(sql.unsafe`SELECT count(*) FROM cotacoes WHERE conta_id = ${conta.contaId}`));
  const antes = await cotacoes();
  for (const path of ['/cotacoes', '/estoque/movimentos']) {
    const corpo = path === '/cotacoes' ? latin1 : Buffer.from(JSON.stringify(movimento({ observacao: 'Devolução' })), 'latin1');
    const res = await request(`${app.baseUrl}${path}`, {
      token: conta.token, headers: { 'idempotency-key': 'latin1-1', 'content-type': 'application/json' }, rawBody: corpo,
    });
    refused(res, 400, 'corpo');
    assert.is(res.body.codigo, 'dados_invalidos');
    assert.match(res.body.detail, 'UTF-8');
  }
  assert.is(await cotacoes(), antes, 'no quotation stored');
  // The refusal kept nothing with the key: the same key with the body in UTF-8 is a new request.
  const emUtf8 = await post('/cotacoes', { ...semAcento, cliente_nome: 'Conceição' }, { 'idempotency-key': 'latin1-1' });
  assert.is(emUtf8.status, 201, emUtf8.text);
  assert.is(emUtf8.body.cliente_nome, 'Conceição');
});

test('dates with year 0000 are 400 in filters and in bodies', async () => {
  refused(await get('/canais?atualizado_desde=0000-01-01T00:00:00Z'), 400, 'atualizado_desde');
  refused(await get('/cotacoes?criado_desde=0000-06-01T00:00:00-03:00'), 400, 'criado_desde');
  refused(await post('/pedidos-producao', { tipo: 'estoque', prazo: '0000-02-01', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1 }] }), 400, 'prazo');
  refused(await post('/cotacoes', { cliente_nome: 'Zé', validade: '0000-12-31', itens: [{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 1 }] }), 400, 'validade');
  assert.is((await get('/canais?atualizado_desde=0001-01-01T00:00:00Z')).status, 200, 'year 0001 is a date PostgreSQL keeps');
});

const LISTS = ['/canais', '/produtos', '/insumos/materiais', '/estoque', '/estoque-insumos', '/cotacoes', '/pedidos-producao'];
const decode = (cursor: string) => JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as string[];
const encode = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');

test('a cursor forged to an impossible timestamp or id is 400 on each of the seven lists', async () => {
  for (const list of LISTS) {
    const first = await get(`${list}?limite=1`);
    assert.is(first.status, 200, list);
    const cursor = first.body.proximo_cursor as string;
    assert.type(cursor, 'string', `${list} has a second page`);
    assert.is((await get(`${list}?limite=1&cursor=${cursor}`)).status, 200, `${list}: its own cursor is good`);
    const [ts, id, binding] = decode(cursor);
    for (const forged of [['2026-13-45 99:99:99+00', id, binding], ['2026-13-45 99:99:99+00', id], ['0000-01-01 00:00:00+00', id, binding], [ts, 'not-a-uuid', binding], [ts], 'x']) {
      const value = typeof forged === 'string' ? forged : encode(forged);
      refused(await get(`${list}?limite=1&cursor=${value}`), 400, 'cursor');
    }
  }
});

test('a cursor is valid only for the list, ordem and filters that made it', async () => {
  const canais = (await get('/canais?limite=1')).body.proximo_cursor as string;
  refused(await get(`/produtos?limite=1&cursor=${canais}`), 400, 'cursor');
  const produtos = (await get('/produtos?limite=1&ordem=criado_em')).body.proximo_cursor as string;
  refused(await get(`/produtos?limite=1&ordem=atualizado_em&cursor=${produtos}`), 400, 'cursor');
  refused(await get(`/produtos?limite=1&ordem=criado_em&ativo=true&cursor=${produtos}`), 400, 'cursor');
  assert.is((await get(`/produtos?limite=5&ordem=criado_em&cursor=${produtos}`)).status, 200, 'another limite is the same query');
  assert.is((await get(`/produtos?limite=1&cursor=${produtos}`)).status, 200, 'ordem=criado_em is the default');
});

test('a quotation whose total passes the column\'s ceiling (R$ 1 bilhão) is 422 with its reason', async () => {
  const res = await post('/cotacoes', { cliente_nome: 'Zé', itens: [{ tipo: 'avulso', nome: 'lote', quantidade: 99_999, preco_unitario_centavos: 100_000_000_000 }] });
  refused(res, 422);
  assert.is(res.body.motivo, 'valor_acima_do_maximo');
  const exact = await post('/cotacoes', { cliente_nome: 'Zé', itens: [{ tipo: 'avulso', nome: 'lote', quantidade: 1, preco_unitario_centavos: 100_000_000_000 }] });
  assert.is(exact.status, 201, 'the ceiling itself is accepted');
  // Priced from a channel's tier, the total is known only to the database: its CHECK gives the same 422.
  const canal = await criarCanalDeTeste(app.db.pool, conta.contaId);
  const caro = await criarProdutoCompleto(app.db.pool, conta.contaId, { precos: [{ canalId: canal, faixas: [[1, 2_000_000]] }] });
  const tier = await post('/cotacoes', { cliente_nome: 'Zé', canal_id: canal, itens: [{ tipo: 'catalogo', variacao_id: caro.variacoes[0]?.id, quantidade: 99_999 }] });
  refused(tier, 422);
  assert.is(tier.body.motivo, 'valor_acima_do_maximo');
});

test('a data error the validation let through is 400 (class 22) or 422 (class 23), never 500', async () => {
  refused(await post('/teste/dominio', { valor: 'não é número', como: 'int' }), 400);
  refused(await post('/teste/dominio', { valor: '99999999999999', como: 'int' }), 400);
  const res = await post('/teste/dominio', { valor: 'duplicado', como: 'unico' });
  refused(res, 422);
  assert.is(res.body.motivo, 'valor_nao_aceito');
});

test.run();
