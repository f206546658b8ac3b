// POST /cotacoes/{id}/status: every transition of the state machine
// (docs/decisions/0029-quotation-and-order-states.md) allowed or refused with 422
// transicao_invalida, the events each one writes with origem api and the key's id, and concurrent
// changes of one quotation applied one after the other, never lost.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { expirarCotacoes } from '#shared/db/cotacoes-expiracao.ts';
import { sql } from '#shared/db/pool.ts';
import { STATUS_COTACAO, TRANSICOES_COTACAO, type StatusCotacao } from '#shared/domain/cotacoes.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { semLimites } from './helpers/catalogo.ts';
import { eventosDe, eventosDesde, levarA, marcaDoOutbox, novaCotacao, SEM_REFERENCIAS } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';

const test = suite('quotation status over the API');
let app: TestApp;
let conta: TestAccount;
let outra: TestAccount;

const mudar = (id: string, status: string, token = conta.token, headers: Record<string, string> = {}) =>
  request(`${app.baseUrl}/cotacoes/${id}/status`, { token, body: { status }, headers: { 'idempotency-key': crypto.randomUUID(), ...headers } });

test.before(async () => {
  // The concurrency tests pile 10-16 transactions on one row lock on purpose; on a loaded machine
  // the default 2 s wait for a connection could turn that queue into 503s, which is not under test.
  app = await startTestApp({ env: { DB_POOL_SIZE: '20', DB_POOL_WAIT_MS: '15000' } });
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  outra = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

/** A quotation of the account in the status asked, reached through the screen and the routine. */
async function cotacaoEm(status: StatusCotacao): Promise<string> {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  const caminho: Record<StatusCotacao, StatusCotacao[]> = {
    rascunho: [], enviada: ['enviada'], aprovada: ['enviada', 'aprovada'], recusada: ['enviada', 'recusada'],
    cancelada: ['cancelada'], expirada: ['enviada'],
  };
  await levarA(app.db.pool, conta.contaId, id, ...caminho[status]);
  if (status === 'expirada') {
    await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET validade = current_date - 2 WHERE id = ${id}`);
    await expirarCotacoes(app.db.pool, conta.contaId);
  }
  return id;
}

test('every allowed transition answers 200 with the quotation; every other one 422 transicao_invalida, changing nothing', async () => {
  const permitidas: string[] = [];
  for (const de of STATUS_COTACAO) {
    for (const para of STATUS_COTACAO) {
      const id = await cotacaoEm(de);
      const antes = await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token });
      assert.is(antes.body.status, de);
      const res = await mudar(id, para);
      const permitida = TRANSICOES_COTACAO[de].includes(para) && para !== 'expirada';
      if (permitida) {
        permitidas.push(`${de}→${para}`);
        assert.is(res.status, 200, `${de} → ${para}: ${res.text}`);
        assert.is(res.body.status, para);
        assert.is(res.body.id, id);
      } else {
        assert.is(res.status, 422, `${de} → ${para}`);
        assert.is(res.body.codigo, 'saldo_insuficiente');
        assert.is(res.body.motivo, 'transicao_invalida', `${de} → ${para}`);
        const depois = await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token });
        assert.equal(depois.body, antes.body, `${de} → ${para} changed nothing`);
      }
    }
  }
  assert.equal(permitidas.sort(), [
    'enviada→aprovada', 'enviada→rascunho', 'enviada→recusada', 'rascunho→cancelada', 'rascunho→enviada', 'recusada→rascunho',
  ], 'the API allows exactly the state machine\'s transitions but expiry');
});

test('each change writes cotacao.status_mudou with origem api and the key, then the event of the state reached', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  const codigo = (await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token })).body.codigo;
  const origem = { via: 'api', chave_id: conta.chaveId };
  const passos: [StatusCotacao, number, unknown[]][] = [
    ['enviada', 1, [{ tipo: 'cotacao.enviada', dados: { objeto: 'cotacao', id, codigo, versao: 1 , ...SEM_REFERENCIAS} }]],
    ['rascunho', 1, []],
    ['enviada', 2, [{ tipo: 'cotacao.enviada', dados: { objeto: 'cotacao', id, codigo, versao: 2 , ...SEM_REFERENCIAS} }]],
    ['recusada', 2, [{ tipo: 'cotacao.recusada', dados: { objeto: 'cotacao', id, codigo , ...SEM_REFERENCIAS} }]],
    ['rascunho', 2, []],
    ['enviada', 3, [{ tipo: 'cotacao.enviada', dados: { objeto: 'cotacao', id, codigo, versao: 3 , ...SEM_REFERENCIAS} }]],
    ['aprovada', 3, [{ tipo: 'cotacao.aprovada', dados: { objeto: 'cotacao', id, codigo , ...SEM_REFERENCIAS} }]],
  ];
  let de: StatusCotacao = 'rascunho';
  for (const [para, versao, depois] of passos) {
    const marca = await marcaDoOutbox(app.db.pool);
    const res = await mudar(id, para);
    assert.is(res.status, 200);
    assert.is(res.body.versao, versao, `versao after ${para}`);
    if (para === 'enviada') assert.ok(res.body.enviada_em, 'enviada_em set');
    assert.equal(await eventosDesde(app.db.pool, conta.contaId, marca), [
      { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de, para, versao, origem , ...SEM_REFERENCIAS} },
      ...depois,
    ], `${de} → ${para}`);
    de = para;
  }
  const refused = await marcaDoOutbox(app.db.pool);
  assert.is((await mudar(id, 'rascunho')).status, 422);
  assert.equal(await eventosDesde(app.db.pool, conta.contaId, refused), [], 'a refused change writes nothing');
});

test("another account's quotation is 404 and stays as it was; a bad status or body is 400", async () => {
  const id = await cotacaoEm('enviada');
  const res = await mudar(id, 'aprovada', outra.token);
  assert.is(res.status, 404);
  assert.is(res.body.codigo, 'nao_encontrado');
  assert.is((await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token })).body.status, 'enviada');
  assert.is((await mudar(id, 'fechada')).status, 400);
  assert.is((await request(`${app.baseUrl}/cotacoes/${id}/status`, { token: conta.token, body: { status: 'aprovada', motivo: 'x' } })).status, 400);
  assert.is((await mudar(crypto.randomUUID(), 'aprovada')).status, 404);
});

test('10 concurrent approvals and refusals of one sent quotation: exactly one wins, the other nine are 422', async () => {
  const id = await cotacaoEm('enviada');
  const marca = await marcaDoOutbox(app.db.pool);
  const pedidos = Array.from({ length: 10 }, (_v, i) => (i % 2 === 0 ? 'aprovada' : 'recusada'));
  const results = await Promise.all(pedidos.map((status) => mudar(id, status)));
  const vencedores = results.filter((r) => r.status === 200);
  assert.is(vencedores.length, 1, results.map((r) => r.status).join(','));
  for (const r of results.filter((r) => r.status !== 200)) {
    assert.is(r.status, 422);
    assert.is(r.body.motivo, 'transicao_invalida');
  }
  const final = vencedores[0]?.body.status;
  assert.is((await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token })).body.status, final);
  const escritos = await eventosDesde(app.db.pool, conta.contaId, marca);
  assert.equal(escritos.map((e) => e.tipo), ['cotacao.status_mudou', final === 'aprovada' ? 'cotacao.aprovada' : 'cotacao.recusada']);
  assert.equal([escritos[0]?.dados.de, escritos[0]?.dados.para], ['enviada', final]);
});

test('concurrent sends and revisions are applied one after the other: every success is one link of an unbroken chain', async () => {
  const id = await cotacaoEm('rascunho');
  const marca = await marcaDoOutbox(app.db.pool);
  const results = await Promise.all(Array.from({ length: 16 }, (_v, i) => mudar(id, i % 2 === 0 ? 'enviada' : 'rascunho')));
  const sucessos = results.filter((r) => r.status === 200).length;
  assert.ok(results.every((r) => r.status === 200 || (r.status === 422 && r.body.motivo === 'transicao_invalida')));
  const mudancas = (await eventosDesde(app.db.pool, conta.contaId, marca)).filter((e) => e.tipo === 'cotacao.status_mudou');
  assert.is(mudancas.length, sucessos, 'one event per applied change, none lost');
  let atual = 'rascunho';
  for (const m of mudancas) {
    assert.is(m.dados.de, atual, 'each change starts where the previous one ended');
    atual = m.dados.para;
  }
  const final = await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token });
  assert.is(final.body.status, atual);
  const envios = mudancas.filter((m) => m.dados.para === 'enviada').length;
  assert.is(final.body.versao, Math.max(1, envios), 'versao counts every send after the first');
});

test('Idempotency-Key on a status change: the repetition replays 200 with the quotation instead of a 422', async () => {
  const id = await cotacaoEm('enviada');
  const first = await mudar(id, 'aprovada', conta.token, { 'idempotency-key': 'aprovar-1' });
  assert.is(first.status, 200);
  const again = await mudar(id, 'aprovada', conta.token, { 'idempotency-key': 'aprovar-1' });
  assert.is(again.status, 200);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  assert.equal(again.body, first.body);
  assert.is((await eventosDe(app.db.pool, conta.contaId, id)).filter((e) => e.tipo === 'cotacao.aprovada').length, 1);
  assert.is((await mudar(id, 'aprovada')).status, 422, 'without the key the repetition is a refused transition');
});

test.run();
