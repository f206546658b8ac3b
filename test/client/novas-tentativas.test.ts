// The official client's safety nets against a real service (real HTTP, real PostgreSQL), each
// failure made for real: a burst ceiling (429 with Retry-After), the process's in-flight ceiling
// (503), a key still running (409), a response lost on the way back (the connection cut by a proxy
// after the service answered), a service that is not there; and the ETag cache's 304s. Every
// attempt is recorded by the fetch the client is given.
import net from 'node:net';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { ErroDaApi, ErroDeConexao } from '../../client/src/index.ts';
import { criarCanal } from '#shared/db/canais.ts';
import { freePort } from '#shared/db/embedded.ts';
import { sql } from '#shared/db/pool.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { criarProdutoCompleto, saldoDe, semLimites } from '../helpers/catalogo.ts';
import { clienteDeTeste, conformantFetch } from '../helpers/cliente.ts';
import { createAccount, createPlan, type TestAccount } from '../helpers/fixtures.ts';
import { lerUso, settled } from '../helpers/uso.ts';

const test = suite('the official client: retries, idempotency keys and the ETag cache');
let app: TestApp;
let conta: TestAccount;
let variacao: string;

test.before(async () => {
  app = await startTestApp({ env: { MAX_IN_FLIGHT: '1' } });
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  variacao = (await criarProdutoCompleto(app.db.pool, conta.contaId)).variacoes[0]?.id ?? '';
  for (let i = 0; i < 3; i++) await criarCanal(app.db.pool, conta.contaId, { nome: `Canal ${i}`, tipo: 'outro' });
});
test.after(async () => app.stop());

type Tentativa = { at: number; status: number | 'erro'; chave: string | null; ifNoneMatch: string | null; replay: string | null };

/** A client whose every attempt is recorded; `depois` runs after each answer (to lift the condition it met). */
function gravado(urlBase: string, chave: string, opcoes: Parameters<typeof clienteDeTeste>[2] = {}, depois?: (t: Tentativa) => void) {
  const tentativas: Tentativa[] = [];
  const cliente = clienteDeTeste(urlBase, chave, {
    ...opcoes,
    fetch: async (request) => {
      const base = { at: performance.now(), chave: request.headers.get('idempotency-key'), ifNoneMatch: request.headers.get('if-none-match') };
      try {
        const response = await conformantFetch(request);
        tentativas.push({ ...base, status: response.status, replay: response.headers.get('idempotent-replayed') });
        depois?.(tentativas.at(-1) as Tentativa);
        return response;
      } catch (error) {
        tentativas.push({ ...base, status: 'erro', replay: null });
        throw error;
      }
    },
  });
  return { cliente, tentativas };
}

async function recusa(call: Promise<unknown>): Promise<Error> {
  try {
    await call;
  } catch (error) {
    return error as Error;
  }
  throw new Error('the call was expected to fail');
}

test('429: waits for Retry-After and gets its answer; a Retry-After beyond esperaMaximaMs comes back at once', async () => {
  await createPlan(app.db.pool, 'rajada_de_um', { rajada: 1, rajada_recarga_por_segundo: 1 });
  const apertada = await createAccount(app.db.pool, { plano: 'rajada_de_um' });
  const { cliente, tentativas } = gravado(app.baseUrl, apertada.token);
  await cliente.GET('/canais');
  const canais = await cliente.GET('/canais');
  assert.is(canais.dados.length, 0);
  assert.equal(tentativas.map((t) => t.status), [200, 429, 200]);
  assert.ok((tentativas[2]?.at ?? 0) - (tentativas[1]?.at ?? 0) >= 950, 'waited the second Retry-After asked for');

  const impaciente = clienteDeTeste(app.baseUrl, apertada.token, { tentativas: { esperaMaximaMs: 500 } });
  await impaciente.GET('/canais').catch(() => undefined);
  const erro = await recusa(impaciente.GET('/canais'));
  assert.instance(erro, ErroDaApi);
  assert.equal([(erro as ErroDaApi).status, (erro as ErroDaApi).codigo, (erro as ErroDaApi).retryAfter, (erro as ErroDaApi).tentativas], [429, 'limite_excedido', 1, 1]);
  const semNovas = clienteDeTeste(app.baseUrl, apertada.token, { tentativas: false });
  await semNovas.GET('/canais').catch(() => undefined);
  assert.is(((await recusa(semNovas.GET('/canais'))) as ErroDaApi).status, 429);
});

test('503: the in-flight ceiling refuses, and the retry after Retry-After is served', async () => {
  // A request whose body never arrives holds the process's only place (MAX_IN_FLIGHT=1) until cut.
  const port = Number(new URL(app.baseUrl).port);
  const presa = net.connect(port, '127.0.0.1');
  await new Promise((resolve) => presa.once('connect', resolve));
  presa.write(`POST /v1/estoque/movimentos/lote HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"mov`);
  await new Promise((r) => setTimeout(r, 100));
  const { cliente, tentativas } = gravado(app.baseUrl, conta.token, {}, (t) => {
    if (t.status === 503) presa.destroy();
  });
  assert.is((await cliente.GET('/canais')).dados.length, 3);
  assert.equal(tentativas.map((t) => t.status), [503, 200]);
  assert.ok((tentativas[1]?.at ?? 0) - (tentativas[0]?.at ?? 0) >= 950, 'waited Retry-After');
});

test('409: while the same key runs elsewhere, the client waits and then gets the answer', async () => {
  const chave = 'em-andamento-1';
  let soltar = () => {};
  const solta = new Promise<void>((resolve) => (soltar = resolve));
  // What a request running with this key holds: its advisory lock (sql/code/idempotency.sql).
  const segurando = app.db.pool.transaction(async (tx) => {
    await tx.query(sql.unsafe`SELECT pg_advisory_xact_lock(hashtextextended(${conta.contaId}::text || ${conta.chaveId}::text || ${chave}, 7410204))`);
    await solta;
  });
  await new Promise((r) => setTimeout(r, 100));
  const { cliente, tentativas } = gravado(app.baseUrl, conta.token, {}, (t) => {
    if (t.status === 409) soltar();
  });
  const movimento = await cliente.POST('/estoque/movimentos', {
    params: { header: { 'Idempotency-Key': chave } },
    body: { tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'correcao' },
  });
  await segurando;
  assert.is(movimento.tipo, 'entrada');
  assert.equal(tentativas.map((t) => [t.status, t.chave]), [[409, chave], [201, chave]]);
});

test('a response lost on the way back: the retry carries the same Idempotency-Key and the write happens once', async () => {
  const proxy = await cortarRespostas(Number(new URL(app.baseUrl).port), 1);
  try {
    const urlBase = `http://127.0.0.1:${proxy.port}/v1`;
    const { cliente, tentativas } = gravado(urlBase, conta.token, { tentativas: { esperaInicialMs: 10 } });
    const antes = await saldoDe(app.db.pool, conta.contaId, variacao);
    const movimento = await cliente.POST('/estoque/movimentos', { body: { tipo: 'entrada', variacao_id: variacao, quantidade: 5, motivo: 'devolucao' } });
    assert.equal(tentativas.map((t) => [t.status, t.replay]), [['erro', null], [201, 'true']]);
    assert.ok(tentativas[0]?.chave && tentativas[0].chave === tentativas[1]?.chave, 'one key, made by the client, on both attempts');
    assert.is(movimento.saldo_depois, antes + 5);
    assert.is(await saldoDe(app.db.pool, conta.contaId, variacao), antes + 5, 'written once');
  } finally {
    await proxy.close();
  }
});

test('no service at all: ErroDeConexao after every attempt, with the key to repeat the POST with', async () => {
  const { cliente, tentativas } = gravado(`http://127.0.0.1:${await freePort()}/v1`, conta.token, { tentativas: { maximo: 2, esperaInicialMs: 5 } });
  const erro = await recusa(cliente.POST('/estoque/movimentos', { body: { tipo: 'entrada', variacao_id: variacao, quantidade: 1, motivo: 'correcao' } }));
  assert.instance(erro, ErroDeConexao);
  assert.is((erro as ErroDeConexao).tentativas, 3);
  assert.equal(tentativas.map((t) => t.status), ['erro', 'erro', 'erro']);
  assert.is((erro as ErroDeConexao).chaveDeIdempotencia, tentativas[0]?.chave);
});

test('the ETag cache: a second GET goes with If-None-Match, its 304 answers the cached body and costs nothing in the month', async () => {
  const { cliente, tentativas } = gravado(app.baseUrl, conta.token, { cacheDeEtag: true });
  const primeira = await cliente.GET('/canais');
  await settled(app);
  const antes = await lerUso(app.db.pool, conta.contaId, conta.chaveId);
  const segunda = await cliente.GET('/canais');
  await settled(app);
  assert.equal(segunda, primeira);
  assert.equal(tentativas.map((t) => t.status), [200, 304]);
  assert.type(tentativas[1]?.ifNoneMatch, 'string');
  assert.is((await lerUso(app.db.pool, conta.contaId, conta.chaveId)).mes, antes.mes);
  await app.db.pool.query(sql.unsafe`UPDATE canais SET nome = 'Canal renomeado' WHERE conta_id = ${conta.contaId} AND nome = 'Canal 0'`);
  const terceira = await cliente.GET('/canais');
  assert.ok(terceira.dados.some((c) => c.nome === 'Canal renomeado'));
  assert.is(tentativas.at(-1)?.status, 200);
  // Each URL is its own entry: another page is asked without If-None-Match.
  await cliente.GET('/canais', { params: { query: { limite: 1 } } });
  assert.is(tentativas.at(-1)?.ifNoneMatch, null);
});

/**
 * A TCP proxy to the service that cuts the client's connection as the service's answer arrives,
 * `vezes` times: the request was served, its response lost.
 */
async function cortarRespostas(destino: number, vezes: number) {
  let restantes = vezes;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((cliente) => {
    const servico = net.connect(destino, '127.0.0.1');
    for (const s of [cliente, servico]) {
      sockets.add(s);
      s.on('close', () => sockets.delete(s)).on('error', () => {});
    }
    cliente.pipe(servico);
    servico.on('data', (chunk: Buffer) => {
      if (restantes > 0) {
        restantes--;
        cliente.destroy();
        servico.destroy();
      } else {
        cliente.write(chunk);
      }
    });
    servico.on('end', () => cliente.end());
  });
  const port = await freePort();
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port,
    close: () => new Promise<void>((resolve) => {
      for (const s of sockets) s.destroy();
      server.close(() => resolve());
    }),
  };
}

test.run();
