// The workshop's side of production orders (the application's screen, stood in for by the same
// queries the operator CLI runs, and plain SQL): every transition of situacao, payment and items
// allowed or refused, and the order events each writer emits exactly once.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { comOrigem } from '#shared/db/origem.ts';
import { sql } from '#shared/db/pool.ts';
import { mudarPagamento, mudarSituacaoItem, mudarSituacaoPedido } from '#shared/db/producao.ts';
import {
  ITEM_PEDIDO_SITUACOES,
  PAGAMENTO_SITUACOES,
  SITUACOES_PEDIDO,
  TRANSICOES_ITEM,
  TRANSICOES_PAGAMENTO,
  TRANSICOES_PEDIDO,
  type SituacaoPedido,
} from '#shared/domain/producao.ts';
import { ApiError } from '#shared/errors.ts';
import { urlDoEvento } from '#shared/domain/eventos.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { eventosDe, eventosDesde, levarA, marcaDoOutbox, novaCotacao, novoPedido, SEM_REFERENCIAS } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';

const test = suite('production orders in the workshop');
let app: TestApp;
let conta: TestAccount;

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

const tela = (fn: Parameters<typeof comOrigem>[2]) => comOrigem(app.db.pool, 'tela', fn);
const situacao = async (id: string) => String(await app.db.pool.oneFirst(sql.unsafe`SELECT situacao FROM pedidos_producao WHERE id = ${id}`));

async function recusa(work: () => Promise<unknown>): Promise<string | undefined> {
  try {
    await work();
  } catch (error) {
    if (error instanceof ApiError) return error.motivo;
    throw error;
  }
  return undefined;
}

async function pedidoEm(s: SituacaoPedido): Promise<string> {
  const id = await novoPedido(app.db.pool, conta.contaId);
  const caminho: Record<SituacaoPedido, SituacaoPedido[]> = {
    aberto: [], em_producao: ['em_producao'], finalizado: ['em_producao', 'finalizado'], cancelado: ['cancelado'],
  };
  for (const para of caminho[s]) await tela((tx) => mudarSituacaoPedido(tx, conta.contaId, id, para));
  return id;
}

test('every order situacao transition is allowed or refused as the state machine says', async () => {
  const permitidas: string[] = [];
  for (const de of SITUACOES_PEDIDO) {
    for (const para of SITUACOES_PEDIDO) {
      const id = await pedidoEm(de);
      const motivo = await recusa(() => tela((tx) => mudarSituacaoPedido(tx, conta.contaId, id, para)));
      if (TRANSICOES_PEDIDO[de].includes(para)) {
        assert.is(motivo, undefined, `${de} → ${para}`);
        assert.is(await situacao(id), para);
        permitidas.push(`${de}→${para}`);
      } else {
        assert.is(motivo, 'transicao_invalida', `${de} → ${para}`);
        assert.is(await situacao(id), de);
      }
    }
  }
  assert.equal(permitidas.sort(), ['aberto→cancelado', 'aberto→em_producao', 'em_producao→aberto', 'em_producao→cancelado', 'em_producao→finalizado']);
});

test('the database refuses the same transitions to plain SQL, and a new order that is not aberto', async () => {
  const id = await pedidoEm('finalizado');
  for (const para of ['aberto', 'em_producao', 'cancelado']) {
    try {
      await app.db.pool.query(sql.unsafe`UPDATE pedidos_producao SET situacao = ${para} WHERE id = ${id}`);
      assert.unreachable(para);
    } catch (error) {
      assert.match(String((error as Error).cause ?? error), /cannot go from finalizado/);
    }
  }
  try {
    await app.db.pool.query(sql.unsafe`INSERT INTO pedidos_producao (conta_id, tipo, origem, situacao) VALUES (${conta.contaId}, 'estoque', 'manual', 'finalizado')`);
    assert.unreachable('a new order is aberto');
  } catch (error) {
    assert.match(String((error as Error).cause ?? error), /cannot go from novo to finalizado/);
  }
  const rascunho = await novaCotacao(app.db.pool, conta.contaId);
  try {
    await app.db.pool.query(sql.unsafe`INSERT INTO pedidos_producao (conta_id, tipo, origem, cotacao_id, cliente_nome, pagamento_situacao)
      VALUES (${conta.contaId}, 'cliente', 'cotacao', ${rascunho}, 'X', 'nao_pago')`);
    assert.unreachable('only an approved quotation becomes an order');
  } catch (error) {
    assert.match(String((error as Error).cause ?? error), /not approved/);
  }
});

test('payment only moves forward, and a stock order has none', async () => {
  for (const de of PAGAMENTO_SITUACOES) {
    for (const para of PAGAMENTO_SITUACOES) {
      const id = await novoPedido(app.db.pool, conta.contaId, { pagamentoSituacao: de });
      const motivo = await recusa(() => tela((tx) => mudarPagamento(tx, conta.contaId, id, para)));
      assert.is(motivo, TRANSICOES_PAGAMENTO[de].includes(para) ? undefined : 'transicao_invalida', `${de} → ${para}`);
    }
  }
  const estoque = await novoPedido(app.db.pool, conta.contaId, { tipo: 'estoque', clienteNome: null, valorCentavos: null });
  assert.is(await recusa(() => tela((tx) => mudarPagamento(tx, conta.contaId, estoque, 'pago'))), 'transicao_invalida');
});

test('an item goes from ativo to finalizado or retirado, and no further', async () => {
  for (const de of ITEM_PEDIDO_SITUACOES) {
    for (const para of ITEM_PEDIDO_SITUACOES) {
      const pedido = await novoPedido(app.db.pool, conta.contaId);
      const item = String(await app.db.pool.oneFirst(sql.unsafe`SELECT id FROM pedido_itens WHERE pedido_id = ${pedido}`));
      if (de !== 'ativo') await tela((tx) => mudarSituacaoItem(tx, conta.contaId, item, de));
      const motivo = await recusa(() => tela((tx) => mudarSituacaoItem(tx, conta.contaId, item, para)));
      assert.is(motivo, TRANSICOES_ITEM[de].includes(para) ? undefined : 'transicao_invalida', `${de} → ${para}`);
    }
  }
});

test('situacao changes emit pedido_producao.situacao_mudou with origem, and concluido once when finalized', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId, { clienteNome: 'Nome Secreto' });
  const codigo = String(await app.db.pool.oneFirst(sql.unsafe`SELECT codigo FROM pedidos_producao WHERE id = ${id}`));
  await tela((tx) => mudarSituacaoPedido(tx, conta.contaId, id, 'em_producao'));
  await tela((tx) => mudarSituacaoPedido(tx, conta.contaId, id, 'aberto'));
  await comOrigem(app.db.pool, 'rotina', (tx) => mudarSituacaoPedido(tx, conta.contaId, id, 'em_producao'));
  await tela((tx) => mudarSituacaoPedido(tx, conta.contaId, id, 'finalizado'));
  await tela((tx) => mudarPagamento(tx, conta.contaId, id, 'pago'));
  const base = { objeto: 'pedido_producao', id, codigo, ...SEM_REFERENCIAS };
  const tela0 = { via: 'tela', chave_id: null };
  const escritos = await eventosDe(app.db.pool, conta.contaId, id);
  assert.equal(escritos, [
    { tipo: 'pedido_producao.criado', dados: { ...base, tipo: 'cliente' } },
    { tipo: 'pedido_producao.situacao_mudou', dados: { ...base, situacao_de: 'aberto', situacao_para: 'em_producao', origem: tela0 } },
    { tipo: 'pedido_producao.situacao_mudou', dados: { ...base, situacao_de: 'em_producao', situacao_para: 'aberto', origem: tela0 } },
    { tipo: 'pedido_producao.situacao_mudou', dados: { ...base, situacao_de: 'aberto', situacao_para: 'em_producao', origem: { via: 'rotina', chave_id: null } } },
    { tipo: 'pedido_producao.situacao_mudou', dados: { ...base, situacao_de: 'em_producao', situacao_para: 'finalizado', origem: tela0 } },
    { tipo: 'pedido_producao.concluido', dados: base },
  ], 'payment and item changes emit nothing');
  for (const e of escritos) assert.is(urlDoEvento('http://x/v1', e.tipo, e.dados), `http://x/v1/pedidos-producao/${id}`);
  assert.not.match(JSON.stringify(escritos), 'Nome Secreto');
});

test('plain SQL of the application emits the order events too, and a cancellation is not a conclusion', async () => {
  const cotacao = await novaCotacao(app.db.pool, conta.contaId);
  await levarA(app.db.pool, conta.contaId, cotacao, 'enviada', 'aprovada');
  const marca = await marcaDoOutbox(app.db.pool);
  const id = String(await app.db.pool.oneFirst(sql.unsafe`
    INSERT INTO pedidos_producao (conta_id, tipo, origem, cotacao_id, cliente_nome, pagamento_situacao)
    VALUES (${conta.contaId}, 'cliente', 'cotacao', ${cotacao}, 'Pelo SQL', 'nao_pago') RETURNING id`));
  await app.db.pool.query(sql.unsafe`UPDATE pedidos_producao SET situacao = 'em_producao' WHERE id = ${id}`);
  await app.db.pool.query(sql.unsafe`UPDATE pedidos_producao SET prioridade = 'urgente' WHERE id = ${id}`);
  await app.db.pool.query(sql.unsafe`UPDATE pedidos_producao SET situacao = 'cancelado' WHERE id = ${id}`);
  const codigo = String(await app.db.pool.oneFirst(sql.unsafe`SELECT codigo FROM pedidos_producao WHERE id = ${id}`));
  const base = { objeto: 'pedido_producao', id, codigo, ...SEM_REFERENCIAS };
  assert.equal(await eventosDesde(app.db.pool, conta.contaId, marca), [
    { tipo: 'pedido_producao.criado', dados: { ...base, tipo: 'cliente' } },
    { tipo: 'pedido_producao.situacao_mudou', dados: { ...base, situacao_de: 'aberto', situacao_para: 'em_producao', origem: { via: 'tela', chave_id: null } } },
    { tipo: 'pedido_producao.situacao_mudou', dados: { ...base, situacao_de: 'em_producao', situacao_para: 'cancelado', origem: { via: 'tela', chave_id: null } } },
  ]);
  const finalizado = await app.db.pool.oneFirst(sql.unsafe`SELECT finalizado_em IS NULL FROM pedidos_producao WHERE id = ${id}`);
  assert.is(finalizado, true);
});

test('concurrent situacao changes of one order are applied one after the other, each event once', async () => {
  const id = await novoPedido(app.db.pool, conta.contaId);
  const marca = await marcaDoOutbox(app.db.pool);
  const results = await Promise.all(Array.from({ length: 10 }, () =>
    recusa(() => tela((tx) => mudarSituacaoPedido(tx, conta.contaId, id, 'cancelado')))));
  assert.is(results.filter((m) => m === undefined).length, 1, 'one cancels; the others find it cancelled');
  assert.ok(results.every((m) => m === undefined || m === 'transicao_invalida'));
  const escritos = await eventosDesde(app.db.pool, conta.contaId, marca);
  assert.is(escritos.filter((e) => e.tipo === 'pedido_producao.situacao_mudou').length, 1);
});

test.run();
