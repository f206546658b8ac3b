// The official client's webhook verification on real deliveries: a receiver written as an
// integrator writes it (node:http and verificarWebhook), the service's worker delivering to it over
// real HTTP, before and during a rotation of the endpoint's secret (two signatures); and what it
// refuses: a changed body, an old delivery, a missing header, a secret that signed nothing.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { assinarWebhook, ErroDeAssinatura, gerarSegredo, verificarWebhook, type Evento } from '../../client/src/index.ts';
import { freePort } from '#shared/db/embedded.ts';
import { criarEndpoint, rotacionarSegredo } from '#shared/db/webhooks.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { createAccount, type TestAccount } from '../helpers/fixtures.ts';
import { emit, eventually } from '../helpers/receiver.ts';

const test = suite('the official client verifies real deliveries');
let app: TestApp;
let conta: TestAccount;
type Chegada = { caminho: string; corpo: string; cabecalhos: http.IncomingHttpHeaders; evento: Evento | null; motivo: string | null };
const chegadas: Chegada[] = [];
let segredos: string[] = [];
let primeiroSegredo = '';
let server: http.Server;
let url = '';

test.before(async () => {
  app = await startTestApp({ worker: true });
  conta = await createAccount(app.db.pool);
  // The receiver: the body as it came, verified with the secrets it holds; 401 when it does not verify.
  server = http.createServer((req, res) => {
    const partes: Buffer[] = [];
    req.on('data', (p: Buffer) => partes.push(p)).on('end', () => {
      const corpo = Buffer.concat(partes).toString('utf8');
      let status = 200;
      try {
        chegadas.push({ caminho: req.url ?? '', corpo, cabecalhos: req.headers, evento: verificarWebhook({ corpo, cabecalhos: req.headers }, { segredo: segredos }), motivo: null });
      } catch (error) {
        chegadas.push({ caminho: req.url ?? '', corpo, cabecalhos: req.headers, evento: null, motivo: error instanceof ErroDeAssinatura ? error.motivo : String(error) });
        status = 401;
      }
      res.statusCode = status;
      res.end();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${port}`;
});
test.after(async () => {
  await app.stop();
  await new Promise((resolve) => server.close(resolve));
});

const chegada = (id: string, caminho: string) =>
  eventually(async () => chegadas.find((c) => c.cabecalhos['webhook-id'] === id && c.caminho === caminho), (c) => c !== undefined);

test('a delivery verifies, and its event is typed by tipo', async () => {
  const endpoint = await criarEndpoint(app.db.pool, { contaId: conta.contaId, usuarioId: conta.usuarioId, url: `${url}/todos`, tipos: ['cotacao.status_mudou'], descricao: null });
  segredos = [endpoint.segredo];
  primeiroSegredo = endpoint.segredo;
  const cotacao = randomUUID();
  const id = await emit(app.db.pool, conta.contaId, 'cotacao.status_mudou', {
    objeto: 'cotacao', id: cotacao, codigo: 'COT-000007', de: 'rascunho', para: 'enviada', origem: { via: 'api', chave_id: conta.chaveId },
    referencia_externa: null, metadados: {},
  });
  const recebida = await chegada(id, '/todos');
  assert.is(recebida?.motivo, null);
  const evento = recebida?.evento;
  if (evento?.tipo !== 'cotacao.status_mudou') throw new Error(`unexpected ${evento?.tipo}`);
  // Narrowed by tipo: dados has de, para and origem, as the compiler knows too.
  assert.equal([evento.dados.de, evento.dados.para, evento.dados.origem.chave_id, evento.id], ['rascunho', 'enviada', conta.chaveId, id]);
});

test('during a rotation a delivery carries two signatures, and either secret verifies it', async () => {
  const endpoint = await criarEndpoint(app.db.pool, { contaId: conta.contaId, usuarioId: conta.usuarioId, url: `${url}/rotacao`, tipos: ['cotacao.aprovada'], descricao: null });
  const antigo = endpoint.segredo;
  const novo = (await rotacionarSegredo(app.db.pool, conta.contaId, endpoint.id))?.segredo ?? '';
  for (const [segredo, nome] of [[antigo, 'the previous secret'], [novo, 'the new secret']] as const) {
    segredos = [segredo];
    const id = await emit(app.db.pool, conta.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000008', referencia_externa: null, metadados: {} });
    const recebida = await chegada(id, '/rotacao');
    assert.is(String(recebida?.cabecalhos['webhook-signature']).split(' ').length, 2);
    assert.is(recebida?.motivo, null, nome);
    assert.is(recebida?.evento?.tipo, 'cotacao.aprovada');
  }
  segredos = [gerarSegredo()];
  const id = await emit(app.db.pool, conta.contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000009', referencia_externa: null, metadados: {} });
  assert.is((await chegada(id, '/rotacao'))?.motivo, 'assinatura_invalida', 'a secret that signed neither');
  // The receiver's own rotation: it holds both, the delivery verifies.
  const recebida = chegadas.find((c) => c.cabecalhos['webhook-id'] === id);
  const { corpo = '', cabecalhos = {} } = recebida ?? {};
  assert.is(verificarWebhook({ corpo, cabecalhos }, { segredo: [gerarSegredo(), novo], agora: new Date(Number(cabecalhos['webhook-timestamp']) * 1000) }).id, id);
});

test('refused: a changed body, an old delivery, a missing header', async () => {
  const recebida = chegadas[0];
  assert.ok(recebida && recebida.motivo === null);
  const { corpo, cabecalhos } = recebida;
  const quando = new Date(Number(cabecalhos['webhook-timestamp']) * 1000);
  const endpoint = await criarEndpoint(app.db.pool, { contaId: conta.contaId, usuarioId: conta.usuarioId, url: `${url}/teste`, tipos: ['webhook.teste'], descricao: null });
  const motivo = (f: () => unknown) => {
    try {
      f();
      return 'aceita';
    } catch (error) {
      return error instanceof ErroDeAssinatura ? error.motivo : String(error);
    }
  };
  const assinado = { id: randomUUID(), corpo: JSON.stringify({ id: 'x', tipo: 'webhook.teste' }) };
  const cab = (extra: Record<string, string> = {}) => ({
    'webhook-id': assinado.id, 'webhook-timestamp': String(Math.floor(quando.getTime() / 1000)),
    'webhook-signature': assinarWebhook(endpoint.segredo, assinado.id, quando, assinado.corpo), ...extra,
  });
  const opcoes = { segredo: endpoint.segredo, agora: quando };
  assert.is(motivo(() => verificarWebhook({ corpo: assinado.corpo, cabecalhos: cab() }, opcoes)), 'aceita');
  assert.is(motivo(() => verificarWebhook({ corpo: assinado.corpo.replace('x', 'y'), cabecalhos: cab() }, opcoes)), 'assinatura_invalida');
  assert.is(motivo(() => verificarWebhook({ corpo: assinado.corpo, cabecalhos: cab() }, { ...opcoes, agora: new Date(quando.getTime() + 301_000) })), 'fora_do_prazo');
  assert.is(motivo(() => verificarWebhook({ corpo: assinado.corpo, cabecalhos: { ...cab(), 'webhook-signature': '' } }, opcoes)), 'cabecalho_ausente');
  // What the service signed verifies with the standardwebhooks package too, and the reverse.
  assert.ok(new Webhook(primeiroSegredo).verify(corpo, { 'webhook-id': String(cabecalhos['webhook-id']), 'webhook-timestamp': String(cabecalhos['webhook-timestamp']), 'webhook-signature': String(cabecalhos['webhook-signature']) }));
  const agora = new Date();
  const porOutro = new Webhook(endpoint.segredo).sign(assinado.id, agora, assinado.corpo);
  assert.is(motivo(() => verificarWebhook({ corpo: assinado.corpo, cabecalhos: new Headers({ ...cab(), 'webhook-timestamp': String(Math.floor(agora.getTime() / 1000)), 'webhook-signature': porOutro }) }, { segredo: endpoint.segredo })), 'aceita');
});

test.run();
