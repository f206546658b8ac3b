// `printfarm escutar` end to end: the command as an integrator runs it (its own process), a real
// service with its worker relaying events (real HTTP, real PostgreSQL), and a real receiver that
// verifies every signature with the standardwebhooks package. What it forwards is byte for byte
// what the worker delivers; waiting costs nothing against the month (304s); stopped and started
// again, it forwards what happened meanwhile and nothing twice.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import type { Printfarm } from '../../client/src/index.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { semLimites } from '../helpers/catalogo.ts';
import { clienteDeTeste } from '../helpers/cliente.ts';
import { rodarCli, type Comando } from '../helpers/escutar.ts';
import { createAccount, type TestAccount } from '../helpers/fixtures.ts';
import { addEndpoint, eventually, startReceiver, type Receiver } from '../helpers/receiver.ts';
import { lerUso, settled } from '../helpers/uso.ts';

const test = suite('escutar: the event log forwarded to a local receiver');
let app: TestApp;
let receiver: Receiver;
let conta: TestAccount;
let cliente: Printfarm;
let dir: string;
let estado: string;
let segredo = '';

test.before(async () => {
  app = await startTestApp({ worker: true });
  await semLimites(app.db.pool); // polls every 200 ms: more reads a minute than a plan allows
  conta = await createAccount(app.db.pool);
  cliente = clienteDeTeste(app.baseUrl, conta.token);
  receiver = await startReceiver();
  // The worker delivers the same events to an endpoint of its own, to compare bytes with.
  await addEndpoint(app.db.pool, receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: '/worker', tipos: ['cotacao.criada'] });
  dir = await mkdtemp(path.join(tmpdir(), 'escutar-'));
  estado = path.join(dir, 'estado.json');
});
test.after(async () => {
  await app.stop();
  await receiver.close();
  await rm(dir, { recursive: true, force: true });
});

const escutar = (...extra: string[]) => rodarCli(['escutar', '--api', app.baseUrl, '--chave', conta.token,
  '--encaminhar', receiver.url('/local'), '--estado', estado, '--intervalo', '0.2', ...extra]);

const novaCotacao = (nome: string) => cliente.POST('/cotacoes', {
  body: { cliente_nome: nome, itens: [{ tipo: 'avulso', nome: 'Caneca', quantidade: 1, preco_unitario_centavos: 2500 }] },
});
const locais = (id?: string) => receiver.received.filter((r) => r.path === '/local' && (id === undefined || r.id === id));
const eventosLogados = async (status: number) => {
  await app.web.flush();
  return Number(await app.db.pool.oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM request_log WHERE chave_id = ${conta.chaveId} AND route = 'listEventos' AND status = ${status}`));
};

let primeira: Comando;

test('prints its secret, and forwards each new event signed with it, as the worker delivers it', async () => {
  primeira = escutar();
  segredo = /(whsec_\S+)/.exec(await primeira.linha(/Segredo para verificar as assinaturas: whsec_/))?.[1] ?? '';
  receiver.setSecrets('/local', segredo);
  await primeira.linha(/Eventos criados a partir de/);
  const cotacoes = [await novaCotacao('Ana'), await novaCotacao('Bruno')];
  // An event enters the log when the worker relays it, a moment after the quotation is made.
  const ids = await Promise.all(cotacoes.map(async (c) => {
    const doLog = () => cliente.GET('/eventos', { params: { query: { tipo: 'cotacao.criada', limite: 100 } } })
      .then((pagina) => pagina.dados.find((e) => e.dados.id === c.id)?.id ?? '');
    return eventually(doLog, (id) => id !== '');
  }));
  const recebidos = await receiver.waitFor(2, (r) => r.path === '/local');
  assert.equal(recebidos.map((r) => r.id), ids, 'in the order they happened');
  assert.equal(receiver.unverified(), []);
  for (const id of ids) {
    const [doWorker] = await receiver.waitFor(1, (r) => r.path === '/worker' && r.id === id);
    assert.is(locais(id)[0]?.body, doWorker?.body, 'the same bytes as the worker\'s delivery');
    assert.is(locais(id)[0]?.headers['content-type'], 'application/json');
    assert.match(await primeira.linha(new RegExp(`cotacao\\.criada  ${id}  → 200 em \\d+ ms`)), /^\d\d:\d\d:\d\d /);
  }
});

test('waiting is a 304 at every poll: nothing against the month', async () => {
  await settled(app);
  const antes = { uso: await lerUso(app.db.pool, conta.contaId, conta.chaveId), naoMudou: await eventosLogados(304) };
  await new Promise((r) => setTimeout(r, 1500)); // several polls at 200 ms, with nothing new
  await settled(app);
  const depois = { uso: await lerUso(app.db.pool, conta.contaId, conta.chaveId), naoMudou: await eventosLogados(304) };
  assert.ok(depois.naoMudou - antes.naoMudou >= 3, `${depois.naoMudou - antes.naoMudou} polls answered 304`);
  assert.is(depois.uso.mes, antes.uso.mes, 'the month did not move');
});

test('a receiver that fails is a line with its status; stopped, started again, it forwards what it missed and nothing twice', async () => {
  receiver.respond(() => ({ status: 500, body: 'falhou' }));
  const falha = await novaCotacao('Carla');
  await primeira.linha(/→ 500 em \d+ ms/);
  receiver.respond(() => ({ status: 200, body: 'ok' }));
  assert.is(await primeira.parar(), 0);
  assert.match(primeira.linhas.join('\n'), 'Parado; a próxima execução continua daqui.');
  const salvo = JSON.parse(await readFile(estado, 'utf8')) as { segredo: string; chave: string };
  assert.equal([salvo.segredo, salvo.chave], [segredo, conta.token.split('_').slice(0, 2).join('_')]);

  const antes = locais().length;
  const enquantoParado = [await novaCotacao('Davi'), await novaCotacao('Eva')];
  const segunda = escutar();
  assert.match(await segunda.linha(/Segredo/), segredo, 'the same secret, from the state file');
  const novos = await receiver.waitFor(antes + 2, (r) => r.path === '/local').then((l) => l.slice(antes));
  assert.equal(novos.map((r) => r.json.dados.id), enquantoParado.map((c) => c.id));
  await new Promise((r) => setTimeout(r, 600)); // a few more polls: nothing else arrives
  assert.is(locais().length, antes + 2);
  // A failed forward is not retried (the line said so): every event came once, the failed one too.
  const porId = new Map<string, number>();
  for (const r of locais()) porId.set(r.id, (porId.get(r.id) ?? 0) + 1);
  assert.equal([...porId.values()], [1, 1, 1, 1, 1]);
  assert.ok(locais().some((r) => r.json.dados.id === falha.id));
  assert.is(await segunda.parar(), 0);
});

test('--desde starts over from an instant: what was created since goes again, with the same secret', async () => {
  const { piso } = JSON.parse(await readFile(estado, 'utf8')) as { piso: string };
  const antes = locais().length;
  const terceira = escutar('--desde', piso);
  const novamente = await receiver.waitFor(antes + 5, (r) => r.path === '/local').then((l) => l.slice(antes));
  assert.equal(new Set(novamente.map((r) => r.id)).size, 5);
  assert.equal(receiver.unverified(), []);
  assert.is(await terceira.parar(), 0);
});

test('a key without eventos:ler stops it at once, saying why', async () => {
  const semEscopo = await createAccount(app.db.pool, { escopos: ['catalogo:ler'] });
  const comando = rodarCli(['escutar', '--api', app.baseUrl, '--chave', semEscopo.token, '--encaminhar', receiver.url('/local'),
    '--estado', path.join(dir, 'sem-escopo.json'), '--intervalo', '0.2']);
  assert.is(await comando.terminou, 1);
  assert.match(comando.linhas.join('\n'), /printfarm: 403 escopo_insuficiente: A chave não tem o escopo eventos:ler/);
});

test.run();
