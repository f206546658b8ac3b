// The application's side through the operator CLI (called in-process, one command of each family
// as a real process): the screen (tela), the customer's link (link) and the expiry routine (rotina),
// each change with its events.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { criarCanalDeTeste, criarProdutoCompleto } from './helpers/catalogo.ts';
import { eventosDe } from './helpers/cotacoes.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { runOps, spawnOps, type OpsResult } from './helpers/ops.ts';

const test = suite('quotations and production through the operator CLI');
let app: TestApp;
let conta: TestAccount;

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool);
});
test.after(async () => app.stop());

const ops = (...args: string[]) => runOps(app.db.url, args);

async function ok(...args: string[]): Promise<any> {
  return succeeded(args, await ops(...args));
}

/** The smoke test of the real process: one command of each family (quotations, production) runs as an operator runs it. */
async function okSpawned(...args: string[]): Promise<any> {
  return succeeded(args, await spawnOps(app.db.url, args));
}

function succeeded(args: string[], result: OpsResult): any {
  assert.is(result.code, 0, `${args.slice(0, 2).join(' ')}: ${result.stderr}`);
  return result.json;
}

const vias = (eventos: { tipo: string; dados: any }[]) =>
  eventos.filter((e) => e.tipo === 'cotacao.status_mudou').map((e) => `${e.dados.de}→${e.dados.para}:${e.dados.origem.via}`);

test('create, send, the customer opens and asks to close, revise, send again, approve, make the order and run it', async () => {
  const canal = await criarCanalDeTeste(app.db.pool, conta.contaId, 'Loja');
  const produto = await criarProdutoCompleto(app.db.pool, conta.contaId, { precos: [{ canalId: canal, faixas: [[1, 2500]] }] });
  const itens = JSON.stringify([
    { tipo: 'catalogo', variacao_id: produto.variacoes[0]?.id, quantidade: 2 },
    { tipo: 'avulso', nome: 'Pintura', quantidade: 1, preco_unitario_centavos: 1000 },
  ]);
  const criada = await okSpawned('cotacoes', 'create', '--conta', conta.contaId, '--cliente-nome', 'Cliente CLI', '--cliente-email', 'cli@cliente.invalid', '--canal', canal, '--itens', itens);
  assert.is(criada.status, 'rascunho');
  assert.is(criada.valor_total_centavos, 6000);
  const id = criada.id;
  assert.is((await ok('cotacoes', 'send', '--conta', conta.contaId, '--cotacao', id)).status, 'enviada');
  const token = (await ok('cotacoes', 'show', '--conta', conta.contaId, '--cotacao', id)).link_token;
  assert.is((await ok('cotacoes', 'open-link', `--token=${token}`)).abertura_n, 1);
  assert.is((await ok('cotacoes', 'open-link', `--token=${token}`)).abertura_n, 2);
  const fechamento = await ok('cotacoes', 'close-deal', `--token=${token}`, '--cor-a-combinar', 'true');
  assert.equal([fechamento.cor_a_combinar, fechamento.versao, fechamento.novo], [true, 1, true]);
  assert.is((await ok('cotacoes', 'revise', '--conta', conta.contaId, '--cotacao', id)).status, 'rascunho');
  const reenviada = await ok('cotacoes', 'send', '--conta', conta.contaId, '--cotacao', id);
  assert.is(reenviada.versao, 2);
  assert.is((await ok('cotacoes', 'approve', '--conta', conta.contaId, '--cotacao', id)).status, 'aprovada');
  const recusa = await ops('cotacoes', 'refuse', '--conta', conta.contaId, '--cotacao', id);
  assert.is(recusa.code, 1);
  assert.match(recusa.stderr, 'aprovada');

  const eventos = await eventosDe(app.db.pool, conta.contaId, id);
  assert.equal(vias(eventos), ['rascunho→enviada:tela', 'enviada→rascunho:tela', 'rascunho→enviada:tela', 'enviada→aprovada:tela']);
  assert.equal(eventos.filter((e) => e.tipo === 'link.aberto').map((e) => e.dados.abertura_n), [1, 2]);
  assert.equal(eventos.filter((e) => e.tipo === 'cotacao.fechamento_pedido').map((e) => e.dados.cor_a_combinar), [true]);
  assert.equal(eventos.filter((e) => e.tipo === 'cotacao.enviada').map((e) => e.dados.versao), [1, 2]);

  const pedido = await okSpawned('pedidos', 'create-from-quotation', '--conta', conta.contaId, '--cotacao', id, '--prazo', '2999-01-01', '--prioridade', 'urgente');
  assert.equal([pedido.origem, pedido.cliente_nome, pedido.valor_centavos, pedido.itens.length], ['cotacao', 'Cliente CLI', 6000, 2]);
  const etapa = await ok('etapas', 'add', '--conta', conta.contaId, '--nome', 'Impressão');
  await ok('etapas', 'add', '--conta', conta.contaId, '--nome', 'Acabamento');
  assert.equal((await ok('etapas', 'list', '--conta', conta.contaId)).map((e: { nome: string }) => e.nome), ['Impressão', 'Acabamento']);
  const [item0, item1] = pedido.itens;
  assert.is((await ok('pedidos', 'set-item-etapa', '--conta', conta.contaId, '--item', item0.id, '--etapa', 'Impressão')).itens[0].etapa, 'Impressão');
  await ok('etapas', 'rename', '--conta', conta.contaId, '--etapa', etapa.id, '--nome', 'Impressão 3D');
  const api = await request(`${app.baseUrl}/pedidos-producao/${pedido.id}`, { token: conta.token });
  assert.is(api.body.itens[0].etapa, 'Impressão 3D');
  assert.is((await ok('pedidos', 'set-item-etapa', '--conta', conta.contaId, '--item', item0.id, '--etapa', 'none')).itens[0].etapa, null);
  assert.is((await ok('pedidos', 'set-situacao', '--conta', conta.contaId, '--pedido', pedido.id, '--situacao', 'em_producao')).situacao, 'em_producao');
  assert.is((await ok('pedidos', 'set-item-situacao', '--conta', conta.contaId, '--item', item1.id, '--situacao', 'retirado')).itens[1].situacao, 'retirado');
  assert.is((await ops('pedidos', 'set-item-situacao', '--conta', conta.contaId, '--item', item1.id, '--situacao', 'ativo')).code, 1);
  assert.is((await ok('pedidos', 'set-pagamento', '--conta', conta.contaId, '--pedido', pedido.id, '--pagamento', 'sinal_pago')).pagamento_situacao, 'sinal_pago');
  assert.is((await ops('pedidos', 'set-pagamento', '--conta', conta.contaId, '--pedido', pedido.id, '--pagamento', 'nao_pago')).code, 1);
  const finalizado = await ok('pedidos', 'set-situacao', '--conta', conta.contaId, '--pedido', pedido.id, '--situacao', 'finalizado');
  assert.ok(finalizado.finalizado_em);
  assert.equal((await eventosDe(app.db.pool, conta.contaId, pedido.id)).map((e) => `${e.tipo}${e.dados.origem ? `:${e.dados.origem.via}` : ''}`), [
    'pedido_producao.criado', 'pedido_producao.situacao_mudou:tela', 'pedido_producao.situacao_mudou:tela', 'pedido_producao.concluido',
  ]);
  assert.is((await ops('pedidos', 'show', '--conta', conta.contaId, '--pedido', crypto.randomUUID())).code, 64);
});

test('refuse, cancel, the expiry routine on demand, and anonymization', async () => {
  const itens = JSON.stringify([{ tipo: 'avulso', nome: 'x', quantidade: 1, preco_unitario_centavos: 100 }]);
  const nova = async (nome: string) => (await ok('cotacoes', 'create', '--conta', conta.contaId, '--cliente-nome', nome, '--itens', itens)).id as string;
  const recusada = await nova('Recusa');
  await ok('cotacoes', 'send', '--conta', conta.contaId, '--cotacao', recusada);
  assert.is((await ok('cotacoes', 'refuse', '--conta', conta.contaId, '--cotacao', recusada)).status, 'recusada');
  const cancelada = await nova('Cancela');
  assert.is((await ok('cotacoes', 'cancel', '--conta', conta.contaId, '--cotacao', cancelada)).status, 'cancelada');
  const vencida = await nova('Vence');
  await ok('cotacoes', 'send', '--conta', conta.contaId, '--cotacao', vencida);
  await app.db.pool.query(sql.unsafe`UPDATE cotacoes SET validade = current_date - 3 WHERE id = ${vencida}`);
  assert.equal(await ok('cotacoes', 'expire', '--conta', conta.contaId), { expiradas: 1 });
  assert.equal(vias(await eventosDe(app.db.pool, conta.contaId, vencida)), ['rascunho→enviada:tela', 'enviada→expirada:rotina']);
  assert.equal(vias(await eventosDe(app.db.pool, conta.contaId, recusada)), ['rascunho→enviada:tela', 'enviada→recusada:tela']);
  assert.is((await eventosDe(app.db.pool, conta.contaId, recusada)).filter((e) => e.tipo === 'cotacao.recusada').length, 1);

  const feito = await ok('clientes', 'anonymize', '--conta', conta.contaId, '--nome', 'Vence');
  assert.is(feito.cotacoes.length, 1);
  assert.is((await ok('cotacoes', 'show', '--conta', conta.contaId, '--cotacao', vencida)).cliente_nome, null);
  const semAlvo = await ops('clientes', 'anonymize', '--conta', conta.contaId);
  assert.is(semAlvo.code, 64);
  assert.match(semAlvo.stderr, '--email');
  assert.is((await ops('cotacoes', 'open-link', '--token', 'nao-existe')).code, 64);
});

test.run();
