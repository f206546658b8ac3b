import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '#shared/db/pool.ts';
import { TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { clienteDeTeste } from './helpers/cliente.ts';
import { client, request } from './helpers/http.ts';

// The routes an integrator calls first, through the official client as an integrator calls them;
// the cursors' refusals and the OpenAPI document at the raw HTTP edge.
const test = suite('saude, conta, tipos-de-evento and the OpenAPI document');
let app: TestApp;
let account: TestAccount;

test.before(async () => {
  app = await startTestApp();
  account = await createAccount(app.db.pool, { plano: 'oficina', escopos: ['pedidos:ler'] });
});
test.after(async () => app.stop());

test('GET /saude answers ok with the version and a date-time with offset', async () => {
  const saude = await clienteDeTeste(app.baseUrl, account.token).GET('/saude');
  assert.is(saude.situacao, 'ok');
  assert.is(saude.versao, 'v1');
  assert.match(saude.agora, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/);
});

test('GET /conta shows the account, the key without its secret, the plan limits and the month use, to which it adds nothing', async () => {
  await app.db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 40)
    ON CONFLICT (conta_id, month) DO UPDATE SET calls = 40`);
  const conta = await clienteDeTeste(app.baseUrl, account.token).GET('/conta');
  assert.is(conta.id, account.contaId);
  assert.is(conta.plano, 'oficina');
  assert.is(conta.chave.id, account.chaveId);
  assert.equal(conta.chave.escopos, ['pedidos:ler']);
  assert.is(conta.chave.prefixo, account.token.slice(4, 12));
  assert.not.match(JSON.stringify(conta), account.token.slice(13));
  assert.equal(conta.limites, {
    chaves_ativas: 3, webhook_endpoints: 3, leituras_por_minuto: 60, escritas_por_minuto: 20, chamadas_por_mes: 150000,
    rajada: 10, rajada_recarga_por_segundo: 2, simultaneas_por_chave: 3, simultaneas_por_conta: 3, entregas_webhook_por_hora: 1000,
  });
  // GET /conta itself costs nothing against the month.
  assert.is(conta.uso.chamadas, 40);
  assert.is(conta.uso.restantes, 150000 - 40);
});

test('GET /tipos-de-evento lists every event type of the contract with its object and permission', async () => {
  const pagina = await clienteDeTeste(app.baseUrl, account.token).GET('/tipos-de-evento');
  assert.is(pagina.proximo_cursor, null);
  const byType = new Map(pagina.dados.map((t) => [t.tipo, t]));
  assert.is(byType.size, 16);
  const expected: [string, string, string | null][] = [
    ['cotacao.criada', 'cotacao', 'cotacoes.ver'], ['cotacao.enviada', 'cotacao', 'cotacoes.ver'],
    ['cotacao.fechamento_pedido', 'cotacao', 'cotacoes.ver'], ['cotacao.status_mudou', 'cotacao', 'cotacoes.ver'],
    ['cotacao.aprovada', 'cotacao', 'cotacoes.ver'], ['cotacao.recusada', 'cotacao', 'cotacoes.ver'],
    ['link.aberto', 'link', 'cotacoes.ver'], ['pedido_producao.criado', 'pedido_producao', 'producao.ver'],
    ['pedido_producao.situacao_mudou', 'pedido_producao', 'producao.ver'], ['pedido_producao.concluido', 'pedido_producao', 'producao.ver'],
    ['estoque.baixo', 'insumo', 'estoque_insumos.ver'], ['estoque.movimentado', 'estoque', 'produtos.ver'],
    ['produto.criado', 'produto', 'produtos.ver'], ['produto.atualizado', 'produto', 'produtos.ver'],
    ['catalogo.atualizado_em_massa', 'catalogo', 'produtos.ver'], ['webhook.teste', 'teste', null],
  ];
  for (const [tipo, objeto, permissao] of expected) {
    const t = byType.get(tipo);
    assert.ok(t, tipo);
    assert.is(t?.objeto, objeto, tipo);
    assert.is(t?.permissao, permissao, tipo);
    assert.ok((t?.descricao.length ?? 0) > 10, tipo);
  }
  assert.is(TIPOS_DE_EVENTO.length, 16);
});

/** A key on a plan without practical ceilings, for tests that page one item at a time. */
async function listerKey(): Promise<TestAccount> {
  await createPlan(app.db.pool, 'paginas', { rajada: 1000, rajada_recarga_por_segundo: 1000, leituras_por_minuto: 10000 });
  return createAccount(app.db.pool, { plano: 'paginas', escopos: ['pedidos:ler'] });
}

test('GET /tipos-de-evento pages like every list: limite=1 goes through every type exactly once', async () => {
  const api = clienteDeTeste(app.baseUrl, (await listerKey()).token);
  const seen: string[] = [];
  for await (const t of api.listar('/tipos-de-evento', { params: { query: { limite: 1 } } })) seen.push(t.tipo);
  assert.equal(seen, TIPOS_DE_EVENTO.map((t) => t.tipo));
  // A page size of its own, with a cursor made under another limite (limite is not bound).
  const first = await api.GET('/tipos-de-evento', { params: { query: { limite: 5 } } });
  assert.is(first.dados.length, 5);
  const rest = await api.GET('/tipos-de-evento', { params: { query: { limite: 100, cursor: first.proximo_cursor ?? '' } } });
  assert.equal(rest.dados.map((t) => t.tipo), seen.slice(5));
  assert.is(rest.proximo_cursor, null);
});

test('GET /tipos-de-evento refuses a cursor of another list, and its cursor is refused by another list', async () => {
  const lister = await listerKey();
  const contaId = lister.contaId;
  for (let i = 0; i < 2; i++) {
    await app.db.pool.query(sql.unsafe`
      INSERT INTO pedidos_producao (conta_id, numero, tipo, origem) VALUES (${contaId}, ${900 + i}, 'estoque', 'manual')`);
  }
  const api = client(app.baseUrl, lister.token);
  const pedidos = await api.get('/pedidos-producao?limite=1');
  assert.is(pedidos.status, 200, pedidos.text);
  assert.type(pedidos.body.proximo_cursor, 'string');
  const tipos = await api.get('/tipos-de-evento?limite=1');
  for (const [path, cursor] of [['/tipos-de-evento', pedidos.body.proximo_cursor], ['/pedidos-producao', tipos.body.proximo_cursor]]) {
    const res = await api.get(`${path}?cursor=${cursor}`);
    assert.is(res.status, 400, path);
    assert.is(res.body.codigo, 'dados_invalidos');
    assert.equal(res.body.erros.map((e: { campo: string }) => e.campo), ['cursor'], path);
    assert.match(res.body.erros[0].mensagem, /^cursor inválido/, path);
  }
  // The catalog has no atualizado_em: the filter is unknown there, as a typo would be.
  const filtro = await api.get('/tipos-de-evento?atualizado_desde=2026-01-01T00:00:00Z');
  assert.is(filtro.status, 400);
  assert.equal(filtro.body.erros, [{ campo: 'atualizado_desde', mensagem: 'parâmetro desconhecido' }]);
});

test('GET /v1/openapi.json is an OpenAPI 3.1 document of every route, served without a key', async () => {
  const res = await request(`${app.baseUrl}/openapi.json`);
  assert.is(res.status, 200);
  assert.is(res.body.openapi, '3.1.0');
  assert.is(res.body.servers[0].url, app.baseUrl);
  for (const path of ['/saude', '/conta', '/tipos-de-evento']) assert.ok(res.body.paths[path]?.get, path);
  const conta = res.body.paths['/conta'].get;
  assert.ok(conta.responses['200'].content['application/json'].schema.properties.chave);
  assert.ok(conta.responses['401'].content['application/problem+json']);
});

test.run();
