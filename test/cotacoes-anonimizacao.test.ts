// Anonymization of a customer under the data-protection law: across quotations and orders, found
// by e-mail, name, a quotation or an order; names, e-mails and notes nulled for good, the API
// showing null, no name in any event payload written after it, other customers untouched.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { anonimizarCliente } from '#shared/db/anonimizacao.ts';
import { comOrigem } from '#shared/db/origem.ts';
import { sql } from '#shared/db/pool.ts';
import { mudarSituacaoPedido } from '#shared/db/producao.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { semLimites } from './helpers/catalogo.ts';
import { cotacaoAprovada, eventos, levarA, novaCotacao, novoPedido } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';

const test = suite('customer anonymization');
let app: TestApp;
let conta: TestAccount;

test.before(async () => {
  app = await startTestApp();
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

const NOME = 'Marina Souza';
const EMAIL = 'marina@cliente.invalid';
const anonimizar = (contaId: string, alvo: Parameters<typeof anonimizarCliente>[2]) =>
  comOrigem(app.db.pool, 'tela', (tx) => anonimizarCliente(tx, contaId, alvo));

/** Every text column of the account's quotations and orders, as one string to search. */
async function tudoQueSobrou(contaId: string): Promise<string> {
  const rows = await app.db.pool.any(sql.type(z.object({ t: z.string() }))`
    SELECT to_jsonb(c)::text AS t FROM cotacoes c WHERE conta_id = ${contaId}
    UNION ALL SELECT to_jsonb(p)::text FROM pedidos_producao p WHERE conta_id = ${contaId}`);
  return rows.map((r) => r.t).join('\n');
}

test('by e-mail: every quotation and order of the customer, found through names and quotations, is anonymized', async () => {
  const nova = await createAccount(app.db.pool);
  const c1 = await novaCotacao(app.db.pool, nova.contaId, { clienteNome: NOME, clienteEmail: EMAIL, observacao: `Ligar para ${NOME}` });
  const c2 = await cotacaoAprovada(app.db.pool, nova.contaId, { clienteNome: 'marina souza ', clienteEmail: null });
  const c3 = await cotacaoAprovada(app.db.pool, nova.contaId, { clienteNome: 'M. Souza', clienteEmail: 'MARINA@cliente.invalid' });
  const outroCliente = await novaCotacao(app.db.pool, nova.contaId, { clienteNome: 'Carlos Lima', clienteEmail: 'carlos@cliente.invalid' });
  const p1 = await novoPedido(app.db.pool, nova.contaId, { origem: 'cotacao', cotacaoId: c2, clienteNome: 'Outro nome no pedido', itens: undefined });
  const p2 = await novoPedido(app.db.pool, nova.contaId, { clienteNome: NOME, observacao: 'Entregar à Marina' });
  const p3 = await novoPedido(app.db.pool, nova.contaId, { origem: 'cotacao', cotacaoId: c3, clienteNome: undefined, itens: undefined });
  const outroPedido = await novoPedido(app.db.pool, nova.contaId, { clienteNome: 'Carlos Lima' });
  const estoque = await novoPedido(app.db.pool, nova.contaId, { tipo: 'estoque', clienteNome: null, valorCentavos: null });

  const feito = await anonimizar(nova.contaId, { email: EMAIL });
  const codigos = async (tabela: 'cotacoes' | 'pedidos_producao', ids: string[]) =>
    (await app.db.pool.anyFirst(sql.type(z.object({ codigo: z.string() }))`
      SELECT codigo FROM ${sql.identifier([tabela])} WHERE id = ANY(${sql.array(ids, 'uuid')}) ORDER BY codigo`));
  assert.equal(feito.cotacoes, await codigos('cotacoes', [c1, c2, c3]));
  assert.equal(feito.pedidos, await codigos('pedidos_producao', [p1, p2, p3]));

  const restos = await tudoQueSobrou(nova.contaId);
  for (const vestigio of ['Marina', 'marina', 'Souza', 'Outro nome no pedido', EMAIL]) assert.not.match(restos, vestigio, vestigio);
  assert.match(restos, 'Carlos Lima', 'another customer is untouched');
  const marcas = await app.db.pool.any(sql.type(z.object({ id: z.string(), anonimo: z.boolean() }))`
    SELECT id, anonimizada_em IS NOT NULL AS anonimo FROM cotacoes WHERE conta_id = ${nova.contaId}
    UNION ALL SELECT id, anonimizado_em IS NOT NULL FROM pedidos_producao WHERE conta_id = ${nova.contaId}`);
  const anonimos = new Set(marcas.filter((m) => m.anonimo).map((m) => m.id));
  assert.equal([c1, c2, c3, p1, p2, p3].map((id) => anonimos.has(id)), [true, true, true, true, true, true]);
  assert.equal([outroCliente, outroPedido, estoque].map((id) => anonimos.has(id)), [false, false, false]);

  const cotacao = await request(`${app.baseUrl}/cotacoes/${c1}`, { token: nova.token });
  assert.is(cotacao.status, 200);
  assert.is(cotacao.body.cliente_nome, null);
  assert.is(cotacao.body.observacao, null);
  const pedido = await request(`${app.baseUrl}/pedidos-producao/${p2}`, { token: nova.token });
  assert.is(pedido.body.cliente_nome, null);
  assert.is(pedido.body.valor_centavos, 12345, 'the business record stays');
  const lista = await request(`${app.baseUrl}/cotacoes`, { token: nova.token });
  assert.not.match(JSON.stringify(lista.body), 'Marina');
});

test('no customer name in event payloads written after it, and the records cannot take a name again', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId, { clienteNome: 'João Anônimo', clienteEmail: 'joao@cliente.invalid' });
  const pedidoAntes = await novoPedido(app.db.pool, conta.contaId, { clienteNome: 'João Anônimo' });
  const antes = await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token });
  await anonimizar(conta.contaId, { cotacaoId: id });
  const depois = await request(`${app.baseUrl}/cotacoes/${id}`, { token: conta.token, headers: { 'if-none-match': antes.headers.get('etag') ?? '' } });
  assert.is(depois.status, 200, 'anonymization changes the representation and its ETag');
  assert.is(depois.body.cliente_nome, null);
  await levarA(app.db.pool, conta.contaId, id, 'enviada', 'aprovada');
  const novo = await novoPedido(app.db.pool, conta.contaId, { origem: 'cotacao', cotacaoId: id, clienteNome: undefined, itens: undefined });
  await comOrigem(app.db.pool, 'tela', (tx) => mudarSituacaoPedido(tx, conta.contaId, novo, 'em_producao'));
  assert.is((await request(`${app.baseUrl}/pedidos-producao/${novo}`, { token: conta.token })).body.cliente_nome, null,
    'an order made later from the anonymized quotation has no name to copy');
  assert.is((await request(`${app.baseUrl}/pedidos-producao/${pedidoAntes}`, { token: conta.token })).body.cliente_nome, null, 'found by name');
  assert.not.match(JSON.stringify(await eventos(app.db.pool, conta.contaId)), 'João');
  try {
    await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET cliente_nome = 'João Anônimo' WHERE id = ${id}`);
    assert.unreachable('an anonymized quotation stays anonymous');
  } catch (error) {
    assert.match(String((error as Error).cause ?? error), /check constraint/);
  }
});

test('by order or by name; anonymizing twice changes nothing more; another account is never touched', async () => {
  const outra = await createAccount(app.db.pool);
  const meu = await novoPedido(app.db.pool, conta.contaId, { clienteNome: 'Ana Ribeiro' });
  const dela = await novoPedido(app.db.pool, outra.contaId, { clienteNome: 'Ana Ribeiro' });
  const feito = await anonimizar(conta.contaId, { pedidoId: meu });
  assert.is(feito.pedidos.length, 1);
  assert.equal(await anonimizar(conta.contaId, { pedidoId: meu }), { cotacoes: [], pedidos: [] });
  assert.is((await request(`${app.baseUrl}/pedidos-producao/${dela}`, { token: outra.token })).body.cliente_nome, 'Ana Ribeiro');
  const porNome = await anonimizar(outra.contaId, { nome: '  ana RIBEIRO ' });
  assert.is(porNome.pedidos.length, 1);
  assert.equal(await anonimizar(outra.contaId, { nome: 'Ninguém' }), { cotacoes: [], pedidos: [] });
});

test.run();
