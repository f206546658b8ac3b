// Quotation and link events written by every writer in the transaction of its change: the
// screen, the customer link, the daily routine and plain SQL of the application. Each exactly once,
// with the dados of contract §6.2 (and the url of rule 3), never a customer's name.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { abrirLink, linkDaCotacao, pedirFechamento } from '#shared/db/cotacao-link.ts';
import { expirarCotacoes } from '#shared/db/cotacoes-expiracao.ts';
import { comOrigem } from '#shared/db/origem.ts';
import { sql } from '#shared/db/pool.ts';
import { tipoDeEvento, urlDoEvento } from '#shared/domain/eventos.ts';
import { createLogger } from '#shared/log.ts';
import { jobs } from '../worker/jobs/index.ts';
import { DEMO_CONTA_ID, loadDemo } from '../ops/demo.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { eventos, eventosDe, eventosDesde, levarA, marcaDoOutbox, novaCotacao, SEM_REFERENCIAS } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';

const test = suite('quotation events from every writer');
let app: TestApp;
let conta: TestAccount;

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

const tela = { via: 'tela', chave_id: null };
const codigoDe = async (id: string) =>
  String(await app.db.pool.oneFirst(sql.type(z.object({ codigo: z.string() }))`SELECT codigo FROM cotacoes WHERE id = ${id}`));
const tokenDe = async (id: string) => (await linkDaCotacao(app.db.pool, conta.contaId, id))?.link_token ?? '';

test('the screen: creation, send, revision, second send, approval, each event once with origem tela', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId, { clienteNome: 'Nome Que Não Vaza' });
  const codigo = await codigoDe(id);
  await levarA(app.db.pool, conta.contaId, id, 'enviada', 'rascunho', 'enviada', 'aprovada');
  assert.equal(await eventosDe(app.db.pool, conta.contaId, id), [
    { tipo: 'cotacao.criada', dados: { objeto: 'cotacao', id, codigo, status: 'rascunho' , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de: 'rascunho', para: 'enviada', versao: 1, origem: tela , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.enviada', dados: { objeto: 'cotacao', id, codigo, versao: 1 , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de: 'enviada', para: 'rascunho', versao: 1, origem: tela , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de: 'rascunho', para: 'enviada', versao: 2, origem: tela , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.enviada', dados: { objeto: 'cotacao', id, codigo, versao: 2 , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de: 'enviada', para: 'aprovada', versao: 2, origem: tela , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.aprovada', dados: { objeto: 'cotacao', id, codigo , ...SEM_REFERENCIAS} },
  ]);
  for (const e of await eventosDe(app.db.pool, conta.contaId, id)) {
    assert.is(urlDoEvento('http://x/v1', e.tipo, e.dados), `http://x/v1/cotacoes/${id}`, `url of ${e.tipo}`);
  }
});

test('the customer link: each opening is one link.aberto numbered, without anything about the opener', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  await levarA(app.db.pool, conta.contaId, id, 'enviada');
  const codigo = await codigoDe(id);
  const token = await tokenDe(id);
  assert.match(token, /^[A-Za-z0-9_-]{40,}$/, 'an unguessable token');
  const marca = await marcaDoOutbox(app.db.pool);
  const primeira = await comOrigem(app.db.pool, 'link', (tx) => abrirLink(tx, token));
  const segunda = await comOrigem(app.db.pool, 'link', (tx) => abrirLink(tx, token));
  assert.is(primeira?.abertura_n, 1);
  assert.is(segunda?.abertura_n, 2);
  // The application counting two openings in one write still emits one event per opening.
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET link_aberturas = link_aberturas + 2 WHERE id = ${id}`);
  const escritos = await eventosDesde(app.db.pool, conta.contaId, marca);
  assert.equal(escritos, [1, 2, 3, 4].map((n) => ({ tipo: 'link.aberto', dados: { objeto: 'link', cotacao_id: id, codigo, abertura_n: n , ...SEM_REFERENCIAS} })));
  assert.is(urlDoEvento('http://x/v1', 'link.aberto', escritos[0]?.dados ?? {}), `http://x/v1/cotacoes/${id}`);
  assert.is(await comOrigem(app.db.pool, 'link', (tx) => abrirLink(tx, 'token-que-nao-existe')), null);
  try {
    await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET link_aberturas = 1 WHERE id = ${id}`);
    assert.unreachable('the counter never goes back');
  } catch (error) {
    assert.match(String((error as Error).cause ?? error), /only grow/);
  }
});

test('close-deal request: once per version, only on a sent quotation, with cor_a_combinar', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  const codigo = await codigoDe(id);
  const token = await tokenDe(id);
  try {
    await comOrigem(app.db.pool, 'link', (tx) => pedirFechamento(tx, token, false));
    assert.unreachable('a draft cannot be closed by the customer');
  } catch (error) {
    assert.match(String((error as Error).cause ?? error), /only a sent quotation/);
  }
  await levarA(app.db.pool, conta.contaId, id, 'enviada');
  const marca = await marcaDoOutbox(app.db.pool);
  const pedido = await comOrigem(app.db.pool, 'link', (tx) => pedirFechamento(tx, token, true));
  assert.is(pedido?.novo, true);
  const repetido = await comOrigem(app.db.pool, 'link', (tx) => pedirFechamento(tx, token, false));
  assert.is(repetido?.novo, false);
  assert.is(repetido?.cor_a_combinar, true, 'the first request stands');
  await levarA(app.db.pool, conta.contaId, id, 'rascunho', 'enviada');
  await comOrigem(app.db.pool, 'link', (tx) => pedirFechamento(tx, token, false));
  const fechamentos = (await eventosDesde(app.db.pool, conta.contaId, marca)).filter((e) => e.tipo === 'cotacao.fechamento_pedido');
  assert.equal(fechamentos, [
    { tipo: 'cotacao.fechamento_pedido', dados: { objeto: 'cotacao', id, codigo, cor_a_combinar: true, versao: 1 , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.fechamento_pedido', dados: { objeto: 'cotacao', id, codigo, cor_a_combinar: false, versao: 2 , ...SEM_REFERENCIAS} },
  ]);
  assert.is((await eventosDe(app.db.pool, conta.contaId, id)).find((e) => e.tipo === 'cotacao.status_mudou')?.dados.origem.via, 'tela');
});

test('the daily routine expires sent quotations past their validade in the account time zone, with origem rotina', async () => {
  const tokyo = await createAccount(app.db.pool);
  await app.db.pool.query(sql.unsafe`UPDATE contas SET fuso_horario = 'Pacific/Kiritimati' WHERE id = ${tokyo.contaId}`);
  const hojeLa = String(await app.db.pool.oneFirst(sql.unsafe`SELECT (now() AT TIME ZONE 'Pacific/Kiritimati')::date::text`));
  const vencida = await novaCotacao(app.db.pool, tokyo.contaId);
  const venceHoje = await novaCotacao(app.db.pool, tokyo.contaId);
  const rascunhoVencido = await novaCotacao(app.db.pool, tokyo.contaId);
  const semValidade = await novaCotacao(app.db.pool, tokyo.contaId);
  for (const id of [vencida, venceHoje, semValidade]) await levarA(app.db.pool, tokyo.contaId, id, 'enviada');
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET validade = ${hojeLa}::date - 1 WHERE id IN (${vencida}, ${rascunhoVencido})`);
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET validade = ${hojeLa}::date WHERE id = ${venceHoje}`);
  const marca = await marcaDoOutbox(app.db.pool);

  const job = jobs.find((j) => j.name === 'cotacoes-expiracao');
  assert.ok(job?.cron, 'a scheduled pg-boss job');
  await job?.handler([], { pool: app.db.pool, config: app.config, log: createLogger('silent', 'test'), boss: null as never });

  const status = async (id: string) => String(await app.db.pool.oneFirst(sql.unsafe`SELECT status FROM cotacoes WHERE id = ${id}`));
  assert.is(await status(vencida), 'expirada');
  assert.is(await status(venceHoje), 'enviada', 'validade is the last valid day');
  assert.is(await status(rascunhoVencido), 'rascunho', 'only sent quotations expire');
  assert.is(await status(semValidade), 'enviada');
  const codigo = await codigoDe(vencida);
  assert.equal(await eventosDesde(app.db.pool, tokyo.contaId, marca), [
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id: vencida, codigo, de: 'enviada', para: 'expirada', versao: 1, origem: { via: 'rotina', chave_id: null } , ...SEM_REFERENCIAS} },
  ]);
  assert.equal(await expirarCotacoes(app.db.pool), { expiradas: 0 }, 'running again changes nothing');
});

test('plain SQL of the application emits the same events, origem tela by default', async () => {
  const id = String(await app.db.pool.oneFirst(sql.unsafe`
    INSERT INTO cotacoes (conta_id, cliente_nome) VALUES (${conta.contaId}, 'Direto no SQL') RETURNING id`));
  await app.db.pool.query(sql.unsafe`
    INSERT INTO cotacao_itens (conta_id, cotacao_id, posicao, tipo, nome, quantidade, preco_unitario_centavos)
    VALUES (${conta.contaId}, ${id}, 0, 'avulso', 'x', 1, 10)`);
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET status = 'enviada' WHERE id = ${id}`);
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET link_aberturas = link_aberturas + 1 WHERE id = ${id}`);
  await app.db.pool.query(sql.unsafe`INSERT INTO cotacao_fechamentos (conta_id, cotacao_id, versao) VALUES (${conta.contaId}, ${id}, 1)`);
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET status = 'recusada' WHERE id = ${id}`);
  const codigo = await codigoDe(id);
  assert.equal(await eventosDe(app.db.pool, conta.contaId, id), [
    { tipo: 'cotacao.criada', dados: { objeto: 'cotacao', id, codigo, status: 'rascunho' , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de: 'rascunho', para: 'enviada', versao: 1, origem: tela , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.enviada', dados: { objeto: 'cotacao', id, codigo, versao: 1 , ...SEM_REFERENCIAS} },
    { tipo: 'link.aberto', dados: { objeto: 'link', cotacao_id: id, codigo, abertura_n: 1 , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.fechamento_pedido', dados: { objeto: 'cotacao', id, codigo, cor_a_combinar: false, versao: 1 , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.status_mudou', dados: { objeto: 'cotacao', id, codigo, de: 'enviada', para: 'recusada', versao: 1, origem: tela , ...SEM_REFERENCIAS} },
    { tipo: 'cotacao.recusada', dados: { objeto: 'cotacao', id, codigo , ...SEM_REFERENCIAS} },
  ]);
  const status = String(await app.db.pool.oneFirst(sql.unsafe`SELECT status FROM cotacoes WHERE id = ${id}`));
  assert.is(status, 'recusada');
});

test('a change that fails writes no event: the outbox shares the transaction', async () => {
  const id = await novaCotacao(app.db.pool, conta.contaId);
  const marca = await marcaDoOutbox(app.db.pool);
  try {
    await app.db.pool.transaction(async (tx) => {
      await tx.query(sql.unsafe`UPDATE cotacoes SET status = 'enviada' WHERE id = ${id}`);
      await tx.query(sql.unsafe`UPDATE cotacoes SET status = 'aprovada' WHERE id = ${id}`);
      await tx.query(sql.unsafe`UPDATE cotacoes SET status = 'rascunho' WHERE id = ${id}`);
    });
    assert.unreachable('aprovada is final');
  } catch (error) {
    assert.match(String((error as Error).cause ?? error), /cannot go from aprovada to rascunho/);
  }
  assert.equal(await eventosDesde(app.db.pool, conta.contaId, marca), []);
});

test('the database refuses what no writer may do: a new quotation not in draft, items of a sent one', async () => {
  for (const status of ['enviada', 'aprovada', 'expirada']) {
    try {
      await app.db.pool.query(sql.unsafe`INSERT INTO cotacoes (conta_id, cliente_nome, status) VALUES (${conta.contaId}, 'X', ${status})`);
      assert.unreachable(status);
    } catch (error) {
      assert.match(String((error as Error).cause ?? error), /cannot go from nova/);
    }
  }
  const id = await novaCotacao(app.db.pool, conta.contaId);
  await levarA(app.db.pool, conta.contaId, id, 'enviada');
  for (const statement of [
    sql.unsafe`UPDATE cotacao_itens SET preco_unitario_centavos = 1 WHERE cotacao_id = ${id}`,
    sql.unsafe`DELETE FROM cotacao_itens WHERE cotacao_id = ${id}`,
    sql.unsafe`INSERT INTO cotacao_itens (conta_id, cotacao_id, posicao, tipo, nome, quantidade, preco_unitario_centavos)
               VALUES (${conta.contaId}, ${id}, 9, 'avulso', 'x', 1, 1)`,
  ]) {
    try {
      await app.db.pool.query(statement);
      assert.unreachable('items of a sent quotation are frozen');
    } catch (error) {
      assert.match(String((error as Error).cause ?? error), /cannot change/);
    }
  }
  await levarA(app.db.pool, conta.contaId, id, 'rascunho');
  await app.db.pool.query(sql.unsafe`UPDATE cotacao_itens SET preco_unitario_centavos = 7, quantidade = 3 WHERE cotacao_id = ${id}`);
  const total = await app.db.pool.oneFirst(sql.unsafe`SELECT valor_total_centavos::int FROM cotacoes WHERE id = ${id}`);
  assert.is(total, 21, 'a revision may change items; the total follows');
});

test('the demo data loads through the same rules and its quotations and orders emitted their events', async () => {
  assert.is(await loadDemo(app.db.pool), true);
  const tipos = (await eventos(app.db.pool, DEMO_CONTA_ID)).map((e) => e.tipo).filter((t) => /^(cotacao|link|pedido)/.test(t));
  const conta = (t: string) => tipos.filter((x) => x === t).length;
  assert.equal([conta('cotacao.criada'), conta('cotacao.enviada'), conta('cotacao.aprovada'), conta('pedido_producao.criado'), conta('pedido_producao.situacao_mudou')], [3, 2, 1, 2, 1]);
});

test("every payload written matches the catalog's dados schema of its type (what the webhooks document promises)", async () => {
  const todos = await app.db.pool.any(sql.type(z.object({ tipo: z.string(), dados: z.record(z.string(), z.unknown()) }))`SELECT tipo, dados FROM outbox`);
  const vistos = new Set<string>();
  for (const { tipo, dados } of todos) {
    const result = tipoDeEvento(tipo).dados.safeParse(dados);
    assert.ok(result.success, `${tipo}: ${JSON.stringify(dados)} ${result.error?.message ?? ''}`);
    vistos.add(tipo);
  }
  for (const tipo of ['cotacao.criada', 'cotacao.enviada', 'cotacao.fechamento_pedido', 'cotacao.status_mudou', 'cotacao.aprovada',
    'cotacao.recusada', 'link.aberto', 'pedido_producao.criado', 'pedido_producao.situacao_mudou']) assert.ok(vistos.has(tipo), tipo);
});

test('no event payload ever carries a customer name or e-mail', async () => {
  const todos = JSON.stringify(await app.db.pool.anyFirst(sql.type(z.object({ dados: z.unknown() }))`SELECT dados FROM outbox`));
  assert.ok(todos.length > 1000, 'events of this suite and of the demo are there');
  for (const nome of ['Nome Que Não Vaza', 'Cliente de Teste', 'Direto no SQL', 'Marina', 'Carlos', 'Prisma', '@']) assert.not.match(todos, nome);
});

test.run();
