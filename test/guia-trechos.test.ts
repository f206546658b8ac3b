// The guide's snippets of requests, run as the guide writes them against a running service (real
// HTTP, real PostgreSQL): the curl ones with bash (where curl exists), the TypeScript ones
// type-checked and run with node beside the official client as npm publishes it
// (test/helpers/pacote.ts), which those that use it import. The catalog they name (the product CANECA with the variations CANECA-P and CANECA-G,
// 120 channels) is made here.
import { readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { criarCanal } from '#shared/db/canais.ts';
import { criarProduto, criarVariacao } from '#shared/db/catalogo.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { definirSaldo, saldoDe } from './helpers/catalogo.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { DRIVERS } from './helpers/guia-drivers.ts';
import { pastaDeTrechos, programa, rodar, todosOsBlocos, trecho, TRECHOS, verificarTipos } from './helpers/guia.ts';
import { client } from './helpers/http.ts';
import { empacotarCliente, instalarCliente } from './helpers/pacote.ts';
import { cannotRun } from './helpers/skip.ts';

const test = suite('the guide\'s snippets of requests');
let app: TestApp;
let dir: string;
let conta: TestAccount;
const variacoes: Record<string, string> = {};
const rodados = new Set<string>();
const CURL = programa('curl');

test.before(async () => {
  app = await startTestApp();
  dir = await pastaDeTrechos('guia-trechos');
  // A plan without practical ceilings: the suite makes dozens of calls in a row.
  await createPlan(app.db.pool, 'guia', {
    rajada: 100_000, rajada_recarga_por_segundo: 100_000, leituras_por_minuto: 1_000_000, escritas_por_minuto: 1_000_000,
    chamadas_por_mes: 100_000_000, simultaneas_por_chave: 50, simultaneas_por_conta: 50,
  });
  conta = await createAccount(app.db.pool, { plano: 'guia' });
  const produto = await criarProduto(app.db.pool, conta.contaId, { sku: 'CANECA', nome: 'Caneca de PLA' });
  for (const [sku, nome] of [['CANECA-P', 'Pequena'], ['CANECA-G', 'Grande']] as const) {
    variacoes[sku] = (await criarVariacao(app.db.pool, conta.contaId, { produtoId: produto.id, sku, nome }))?.id ?? '';
  }
  await definirSaldo(app.db.pool, conta.contaId, variacoes['CANECA-P'] ?? '', 20);
  for (let i = 0; i < 120; i++) await criarCanal(app.db.pool, conta.contaId, { nome: `Canal ${i}`, tipo: 'outro' });
});
test.after(async () => {
  await app?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const env = (chave = conta.token) => ({ PRINTFARM_API: app.baseUrl, PRINTFARM_CHAVE: chave });
const json = (texto: string) => JSON.parse(texto) as Record<string, any>;
const linhas = (texto: string) => texto.replace(/\r/g, '').split('\n').filter(Boolean);

/** Runs a shell snippet as written and returns what it printed (it must exit 0). */
async function sh(nome: string, chave?: string): Promise<string> {
  const b = await trecho(nome);
  assert.is(b.lang, 'sh', nome);
  rodados.add(nome);
  const out = await rodar('bash', ['-c', b.codigo], { cwd: dir, env: env(chave) });
  assert.is(out.code, 0, `${nome}: ${out.stderr}`);
  return out.stdout;
}

/** Runs a TypeScript snippet with node: the snippet itself, or the driver of one that exports a function. */
async function ts(nome: string, chave?: string): Promise<string> {
  rodados.add(nome);
  const out = await rodar(process.execPath, [DRIVERS[nome] ? `${nome}.driver.ts` : `${nome}.ts`], { cwd: dir, env: env(chave) });
  assert.is(out.code, 0, `${nome}: ${out.stderr}`);
  return out.stdout;
}

/** The output the guide shows for a snippet (```http saida=<nome>). */
const saidaMostrada = async (nome: string) => linhas((await todosOsBlocos()).find((b) => b.marcas.saida === nome)?.codigo ?? '');

test('gerar-tipos generates a client\'s types from the served document; every TypeScript snippet type-checks beside the official client', async () => {
  await sh('gerar-tipos');
  assert.match(await readFile(path.join(dir, 'api.d.ts'), 'utf8'), '"/estoque/movimentos/lote"');
  await instalarCliente(dir, await empacotarCliente(dir));
  for (const [nome, suiteDoTrecho] of Object.entries(TRECHOS)) {
    const b = await trecho(nome);
    if (suiteDoTrecho !== 'guia-trechos' || b.lang !== 'ts') continue;
    await writeFile(path.join(dir, `${nome}.ts`), `${b.codigo}\n`);
    if (DRIVERS[nome]) await writeFile(path.join(dir, `${nome}.driver.ts`), DRIVERS[nome]);
  }
  const tipos = await verificarTipos(dir);
  assert.is(tipos.code, 0, tipos.stdout + tipos.stderr);
});

test('cliente-tipado reads the account and the catalog through the official client', async () => {
  const out = await ts('cliente-tipado');
  assert.match(out, /: plano guia, \d+ chamadas restantes no mês/);
  assert.match(out, 'CANECA Caneca de PLA');
});

test('retry-after: after a 429, comEspera waits for Retry-After and gets its answer', async () => {
  await createPlan(app.db.pool, 'guia_rajada', { rajada: 1, rajada_recarga_por_segundo: 1 });
  const apertada = await createAccount(app.db.pool, { plano: 'guia_rajada' });
  assert.equal(json(await ts('retry-after', apertada.token)), { recusada: true, status: 200 });
});

test('escrita-segura: the same key twice is one movement, the second answer a repetition', async () => {
  assert.equal(json(await ts('escrita-segura')), { status: [201, 201], repetida: 'true', mesmo: true });
});

test('paginar follows proximo_cursor through every page, with and without a filter', async () => {
  assert.equal(json(await ts('paginar')), { todos: 120, filtrados: 120 });
});

test('lote: a batch with a refused item writes nothing; its repetition is the same refusal, even after the stock changed', async () => {
  const antes = await saldoDe(app.db.pool, conta.contaId, variacoes['CANECA-P'] ?? '');
  const recusa = 'item 1: saldo_insuficiente (O saldo é 0; a saída não cabe nele.)';
  assert.equal(linhas(await ts('lote')), [recusa]);
  assert.is(await saldoDe(app.db.pool, conta.contaId, variacoes['CANECA-P'] ?? ''), antes, 'nothing written');
  const entrada = await client(app.baseUrl, conta.token).post('/estoque/movimentos',
    { tipo: 'entrada', sku: 'CANECA-G', quantidade: 5, motivo: 'correcao' }, { 'Idempotency-Key': 'guia-lote-estoque' });
  assert.is(entrada.status, 201);
  assert.equal(linhas(await ts('lote')), [recusa]);
});

if (!CURL) {
  cannotRun(test, 'the curl snippets of the guide run against the service', 'no curl on PATH', 'install it with apt-get install curl');
} else {
  test('saude, conta and produtos: the first calls', async () => {
    assert.equal(Object.keys(json(await sh('saude'))), ['situacao', 'versao', 'agora']);
    const minhaConta = json(await sh('conta'));
    assert.is(minhaConta.plano, 'guia');
    assert.type(minhaConta.uso.restantes, 'number');
    const produtos = json(await sh('produtos'));
    assert.equal([produtos.dados.map((p: { sku: string }) => p.sku), produtos.proximo_cursor], [['CANECA'], null]);
  });

  test('primeira-escrita and movimento-por-sku move stock by SKU, with an external reference and metadata', async () => {
    const entrada = json(await sh('primeira-escrita'));
    assert.equal([entrada.tipo, entrada.variacao_id, entrada.saldo_depois - entrada.saldo_antes], ['entrada', variacoes['CANECA-P'], 10]);
    const saida = json(await sh('movimento-por-sku'));
    assert.equal([saida.tipo, saida.saldo_antes - saida.saldo_depois, saida.referencia_externa, saida.metadados],
      ['saida', 2, 'PEDIDO-8232', { marketplace: 'Vitrine', loja: 'São Paulo' }]);
    const doPedido = json(await sh('movimentos-do-pedido'));
    assert.equal(doPedido.dados.map((m: { id: string }) => m.id), [saida.id]);
  });

  test('repeticao: the second POST with the key is a repetition, as the guide shows', async () => {
    assert.equal(linhas(await sh('repeticao')), await saidaMostrada('repeticao'));
  });

  test('cabecalhos-de-limite prints the policy of a Farm key as the guide shows it', async () => {
    const farm = await createAccount(app.db.pool, { plano: 'farm' });
    const [politica, estado] = linhas(await sh('cabecalhos-de-limite', farm.token));
    const [mostrada, estadoMostrado] = await saidaMostrada('cabecalhos-de-limite');
    assert.is(politica, mostrada);
    assert.match(estado ?? '', /^RateLimit: "rajada";r=\d+;t=\d+$/);
    assert.match(estadoMostrado ?? '', /^RateLimit: "rajada";r=\d+;t=\d+$/);
  });

  test('etag: the second request with If-None-Match is a 304; head: headers without a body', async () => {
    assert.is(await sh('etag'), '304\n');
    const cabecalhos = linhas(await sh('head'));
    assert.match(cabecalhos[0] ?? '', /^HTTP\/1\.1 200/);
    for (const nome of ['etag', 'ratelimit', 'content-length']) {
      assert.ok(cabecalhos.some((l) => l.toLowerCase().startsWith(`${nome}:`)), nome);
    }
  });
}

test('every snippet assigned to this suite ran (or its tool is missing)', () => {
  const meus = Object.entries(TRECHOS).filter(([, s]) => s === 'guia-trechos').map(([n]) => n);
  const semCurl = new Set(['saude', 'conta', 'produtos', 'primeira-escrita', 'movimento-por-sku', 'movimentos-do-pedido', 'repeticao',
    'cabecalhos-de-limite', 'etag', 'head']);
  assert.equal(meus.filter((n) => !rodados.has(n) && !(CURL === null && semCurl.has(n))), []);
});

test.run();
