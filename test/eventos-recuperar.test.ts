// POST /eventos/recuperar (issue 37, item 3): recovery by time range against a real worker and a real
// receiver that was down (answered 500) and came back: what failed arrives once more, exactly once;
// a simulation schedules nothing; the range is bounded; the scope, the account and the key's
// repetitions are respected; the hourly cap holds what exceeds it until the next hour.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { sql } from '#shared/db/pool.ts';
import { recuperar, RECUPERACAO } from '#shared/db/recuperacao.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, createPlan } from './helpers/fixtures.ts';
import { client } from './helpers/http.ts';
import { addEndpoint, emit, eventually, startReceiver, type Receiver } from './helpers/receiver.ts';
import { awayFromHourBoundary } from './helpers/uso.ts';

const test = suite('event recovery by time range');
let app: TestApp;
let receiver: Receiver;
/** Paths whose receiver is "down": it answers 500 to them. */
const fora = new Set<string>();

test.before(async () => {
  receiver = await startReceiver();
  receiver.respond((r) => (fora.has(r.path) ? { status: 500, body: 'fora do ar' } : { status: 200, body: 'ok' }));
  app = await startTestApp({ worker: true });
  // Room for the many calls of a test (each costs 5 units of the burst and of the minute's writes).
  await createPlan(db(), 'amplo', AMPLO);
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

const AMPLO = { rajada: 500, rajada_recarga_por_segundo: 100, escritas_por_minuto: 1000 };
const db = () => app.db.pool;
const api = (token: string) => client(app.baseUrl, token);
const chave = () => `recuperar-${randomUUID()}`;
const recuperarPost = (token: string, body: unknown, key = chave()) => api(token).post('/eventos/recuperar', body, { 'idempotency-key': key });

const cotacaoAprovada = (contaId: string) => emit(db(), contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });

const Entrega = z.object({ event_id: z.string(), endpoint_id: z.string(), status: z.string(), attempts: z.number(), lease_id: z.string().nullable(), next_attempt_at: z.string() });
/** Every delivery of the account, working and archived (the entregas view), in a stable order. */
const entregas = (contaId: string) => db().any(sql.type(Entrega)`
  SELECT event_id, endpoint_id, status, attempts, lease_id, next_attempt_at FROM all_deliveries WHERE conta_id = ${contaId} ORDER BY event_id, endpoint_id`);

/** Waits until no delivery of the account is under a lease and every one was attempted. */
const assentadas = (contaId: string, n: number) =>
  eventually(() => entregas(contaId), (d) => d.length === n && d.every((x) => x.lease_id === null && x.attempts > 0));

/** Arrivals at `path` of each of these events. */
const chegadas = (path: string, ids: readonly string[]) => ids.map((id) => receiver.received.filter((r) => r.path === path && r.id === id).length);

/**
 * An account with a receiver that is down (/<n>/fora: every attempt 500, its retries pushed an hour
 * away as a long backoff would) and one that is up (/<n>/ok), and `n` events both were sent, in
 * [desde, ate). The down one's deliveries are pending after one failed attempt; with `desistida`,
 * the first is given up (failed) and archived, as the pipeline leaves it 5 minutes after.
 */
async function cenario(n: number, options: { plano?: string; desistida?: boolean } = {}) {
  const conta = await createAccount(db(), { plano: options.plano ?? 'amplo' });
  const tag = randomUUID().slice(0, 8);
  const caido = `/${tag}/fora`;
  fora.add(caido);
  const down = await addEndpoint(db(), receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: caido });
  const up = await addEndpoint(db(), receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: `/${tag}/ok` });
  const desde = new Date(Date.now() - 1000).toISOString();
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await cotacaoAprovada(conta.contaId));
  await assentadas(conta.contaId, 2 * n);
  await db().query(sql.unsafe`UPDATE deliveries SET next_attempt_at = now() + interval '1 hour' WHERE conta_id = ${conta.contaId} AND status = 'pending'`);
  if (options.desistida) {
    await db().query(sql.unsafe`
      UPDATE deliveries SET status = 'failed', completed_at = now() - interval '1 hour', next_attempt_at = now() - interval '1 hour', last_error = 'HTTP 500'
       WHERE conta_id = ${conta.contaId} AND endpoint_id = ${down.id} AND event_id = ${ids[0] ?? null}`);
    await archiveEnded(db(), FROM_THE_START, { afterSeconds: 0 });
  }
  const ate = new Date(Date.now() + 1000).toISOString();
  return { conta, caido, down, up, ids, desde, ate, ok: `/${tag}/ok` };
}

test('a receiver that was down gets every delivery that failed, exactly once each, archived ones included; the others get nothing', async () => {
  const c = await cenario(3, { desistida: true });
  assert.equal(chegadas(c.caido, c.ids), [1, 1, 1], 'one failed attempt each');
  assert.equal(chegadas(c.ok, c.ids), [1, 1, 1]);
  fora.delete(c.caido);
  const res = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate });
  assert.is(res.status, 202, res.text);
  assert.equal(res.body.simulacao, false);
  assert.equal([res.body.eventos, res.body.entregas, res.body.proximo_desde], [3, 3, null]);
  assert.equal(res.body.por_endpoint, [{ endpoint_id: c.down.id, entregas: 3 }]);
  assert.equal(res.body.entregas_por_hora.limite, 5000);
  await receiver.waitFor(6, (r) => r.path === c.caido);
  const finais = await eventually(() => entregas(c.conta.contaId), (d) => d.every((x) => x.status === 'succeeded' && x.lease_id === null));
  assert.ok(finais.every((x) => x.status === 'succeeded'), 'every delivery ends delivered');
  assert.equal(chegadas(c.caido, c.ids), [2, 2, 2], 'each failed one arrived once more, exactly once');
  assert.equal(chegadas(c.ok, c.ids), [1, 1, 1], 'what was delivered is not sent again');
  assert.ok(receiver.received.filter((r) => r.path === c.caido).every((r) => r.verified));
  const original = receiver.received.find((r) => r.path === c.caido && r.id === c.ids[0]);
  const de_novo = receiver.received.filter((r) => r.path === c.caido && r.id === c.ids[0]).at(-1);
  assert.is(de_novo?.body, original?.body, 'the same body under the same webhook-id');

  // Nothing failed any more: a second recovery schedules nothing.
  const nada = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate });
  assert.equal([nada.status, nada.body.eventos, nada.body.entregas, nada.body.por_endpoint], [202, 0, 0, []]);
});

test('simular answers the same counts and schedules nothing; somente_falhas false takes every event to every endpoint', async () => {
  const c = await cenario(2);
  fora.delete(c.caido);
  const antes = await entregas(c.conta.contaId);
  const simulado = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate, simular: true });
  assert.is(simulado.status, 202, simulado.text);
  assert.equal([simulado.body.simulacao, simulado.body.eventos, simulado.body.entregas], [true, 2, 2]);
  const todos = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate, somente_falhas: false, simular: true });
  assert.equal([todos.body.eventos, todos.body.entregas], [2, 4]);
  assert.equal(todos.body.por_endpoint.map((p: any) => p.entregas), [2, 2]);
  const soUm = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate, somente_falhas: false, simular: true, endpoint_id: c.up.id });
  assert.equal(soUm.body.por_endpoint, [{ endpoint_id: c.up.id, entregas: 2 }]);
  const outroTipo = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate, tipo: 'pedido_producao.criado', simular: true });
  assert.equal([outroTipo.body.eventos, outroTipo.body.entregas], [0, 0], 'tipo filters as GET /eventos does');
  assert.equal(await entregas(c.conta.contaId), antes, 'a simulation changed no delivery');
  assert.equal(chegadas(c.caido, c.ids), [1, 1]);

  const feito = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate, somente_falhas: false });
  assert.equal([feito.body.simulacao, feito.body.eventos, feito.body.entregas], [false, 2, 4], 'the counts the simulation gave');
  await receiver.waitFor(4, (r) => r.path === c.caido);
  await receiver.waitFor(4, (r) => r.path === c.ok);
  await eventually(() => entregas(c.conta.contaId), (d) => d.every((x) => x.status === 'succeeded' && x.lease_id === null));
  assert.equal([chegadas(c.caido, c.ids), chegadas(c.ok, c.ids)], [[2, 2], [2, 2]]);
});

test('the range: ate after desde and at most 7 days after it, else 400 dados_invalidos saying so; both required', async () => {
  const conta = await createAccount(db(), { plano: 'amplo' });
  const cases: [unknown, string][] = [
    [{ desde: '2026-11-20T12:00:00Z', ate: '2026-11-20T12:00:00Z' }, 'deve ser posterior a desde'],
    [{ desde: '2026-11-20T12:00:00Z', ate: '2026-11-20T11:00:00Z' }, 'deve ser posterior a desde'],
    [{ desde: '2026-11-20T12:00:00Z', ate: '2026-11-27T12:00:00.001Z' }, `no máximo ${RECUPERACAO.maxDias} dias depois de desde`],
  ];
  for (const [body, mensagem] of cases) {
    const res = await recuperarPost(conta.token, body);
    assert.is(res.status, 400, res.text);
    assert.is(res.body.codigo, 'dados_invalidos');
    assert.match(res.body.detail, /intervalo é inválido: ate deve ser posterior a desde, e o intervalo pode ter no máximo 7 dias/);
    assert.equal(res.body.erros, [{ campo: 'ate', mensagem }]);
  }
  const semDesde = await recuperarPost(conta.token, { ate: '2026-11-20T12:00:00Z' });
  assert.equal([semDesde.status, semDesde.body.erros.map((e: any) => e.campo)], [400, ['desde']]);
  const seteDias = await recuperarPost(conta.token, { desde: '2026-11-20T12:00:00Z', ate: '2026-11-27T12:00:00Z', simular: true });
  assert.is(seteDias.status, 202, 'exactly 7 days is accepted');
});

test('scope eventos:reenviar (403 without); another account is never touched, and its endpoint is 422 referencia_invalida', async () => {
  const c = await cenario(1);
  const outra = await cenario(1);
  fora.delete(c.caido);
  const leitor = await createAccount(db(), { escopos: ['eventos:ler'] });
  const semEscopo = await recuperarPost(leitor.token, { desde: c.desde, ate: c.ate });
  assert.equal([semEscopo.status, semEscopo.body.codigo], [403, 'escopo_insuficiente']);
  const daOutra = await entregas(outra.conta.contaId);
  const res = await recuperarPost(c.conta.token, { desde: c.desde, ate: outra.ate, somente_falhas: false });
  assert.equal([res.status, res.body.eventos, res.body.entregas], [202, 1, 2], 'only its own event, though the range holds the other account\'s');
  const alheio = await recuperarPost(c.conta.token, { desde: c.desde, ate: outra.ate, endpoint_id: outra.down.id });
  assert.equal([alheio.status, alheio.body.motivo], [422, 'referencia_invalida']);
  await receiver.waitFor(2, (r) => r.path === c.caido);
  await assentadas(c.conta.contaId, 2);
  assert.equal(await entregas(outra.conta.contaId), daOutra, "the other account's deliveries are as they were");
  assert.equal(chegadas(outra.caido, outra.ids), [1]);
  const doutraConta = await recuperarPost(outra.conta.token, { desde: c.desde, ate: outra.ate, simular: true });
  assert.equal([doutraConta.body.eventos, doutraConta.body.por_endpoint], [1, [{ endpoint_id: outra.down.id, entregas: 1 }]]);
});

test('a key sees only the events its creator would receive: a recovery never sends another type', async () => {
  const c = await cenario(1);
  const pedido = await emit(db(), c.conta.contaId, 'pedido_producao.criado', { objeto: 'pedido_producao', id: randomUUID(), codigo: 'OP-000001', tipo: 'estoque' });
  await assentadas(c.conta.contaId, 4);
  await db().query(sql.unsafe`UPDATE usuarios SET permissoes = '{producao.ver}' WHERE id = ${c.conta.usuarioId}`);
  const res = await recuperarPost(c.conta.token, { desde: c.desde, ate: new Date(Date.now() + 1000).toISOString(), somente_falhas: false, simular: true });
  assert.equal([res.status, res.body.eventos, res.body.entregas], [202, 1, 2], 'the order only: cotacao.aprovada needs cotacoes.ver');
  assert.ok(pedido);
});

test('a repetition of the Idempotency-Key answers the same counts and schedules nothing; another body is a conflict', async () => {
  const c = await cenario(2);
  fora.delete(c.caido);
  const key = chave();
  const first = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate }, key);
  assert.is(first.status, 202);
  await receiver.waitFor(4, (r) => r.path === c.caido);
  await eventually(() => entregas(c.conta.contaId), (d) => d.every((x) => x.status === 'succeeded' && x.lease_id === null));
  const depois = await entregas(c.conta.contaId);
  const repeated = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate }, key);
  assert.is(repeated.status, 202);
  assert.is(repeated.headers.get('idempotent-replayed'), 'true');
  assert.equal(repeated.body, first.body);
  assert.equal(await entregas(c.conta.contaId), depois, 'nothing scheduled again');
  const conflict = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate, simular: true }, key);
  assert.equal([conflict.status, conflict.body.codigo], [422, 'idempotencia_conflito']);
  const semChave = await api(c.conta.token).post('/eventos/recuperar', { desde: c.desde, ate: c.ate });
  assert.equal([semChave.status, semChave.body.erros.map((e: any) => e.campo)], [400, ['idempotency-key']]);
});

test("over the hourly cap what the recovery scheduled waits for the next hour, and is not dropped", async () => {
  await createPlan(db(), 'quatro_por_hora', { ...AMPLO, entregas_webhook_por_hora: 4 });
  await awayFromHourBoundary(db());
  const c = await cenario(2, { plano: 'quatro_por_hora' });
  // 4 deliveries this hour already (2 to each endpoint): the cap is reached.
  fora.delete(c.caido);
  const res = await recuperarPost(c.conta.token, { desde: c.desde, ate: c.ate });
  assert.equal([res.body.entregas, res.body.entregas_por_hora], [2, { limite: 4, usadas: 4 }]);
  const nextHour = new Date();
  nextHour.setUTCMinutes(0, 0, 0);
  nextHour.setUTCHours(nextHour.getUTCHours() + 1);
  const held = await eventually(() => entregas(c.conta.contaId),
    (d) => d.filter((x) => x.endpoint_id === c.down.id).every((x) => x.lease_id === null && Date.parse(x.next_attempt_at) === nextHour.getTime()));
  assert.ok(held.filter((x) => x.endpoint_id === c.down.id).every((x) => x.status === 'pending' && Date.parse(x.next_attempt_at) === nextHour.getTime()), 'held, not dropped');
  assert.equal(chegadas(c.caido, c.ids), [1, 1]);
  await db().query(sql.unsafe`UPDATE webhook_hourly_usage SET hour = hour - interval '1 hour' WHERE conta_id = ${c.conta.contaId}`);
  await db().query(sql.unsafe`UPDATE deliveries SET next_attempt_at = now() WHERE conta_id = ${c.conta.contaId} AND status = 'pending'`);
  await db().query(sql.unsafe`SELECT pg_notify('webhook_delivery_due', '')`);
  await receiver.waitFor(4, (r) => r.path === c.caido);
  assert.equal(chegadas(c.caido, c.ids), [2, 2]);
});

test('one call takes at most maxEventos events, oldest first, never splitting an instant; proximo_desde continues exactly', async () => {
  const conta = await createAccount(db());
  const endpoint = await addEndpoint(db(), receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: `/${randomUUID()}/corte` });
  const ids: string[] = [];
  for (let i = 0; i < 5; i++) ids.push(await cotacaoAprovada(conta.contaId));
  await assentadas(conta.contaId, 5);
  // Two events at the first instant, then one a second.
  const instantes = ['2026-11-20T12:00:00.000Z', '2026-11-20T12:00:00.000Z', '2026-11-20T12:00:01.000Z', '2026-11-20T12:00:02.000Z', '2026-11-20T12:00:03.000Z'];
  for (const [i, id] of ids.entries()) {
    await db().query(sql.unsafe`UPDATE outbox SET criado_em = ${instantes[i] ?? null}::timestamptz WHERE id = ${id}`);
    await db().query(sql.unsafe`UPDATE outbox_archive SET criado_em = ${instantes[i] ?? null}::timestamptz WHERE id = ${id}`);
  }
  const leitor = { contaId: conta.contaId, usuarioId: conta.usuarioId };
  const filtro = (desde: string) => ({ desde, ate: '2026-11-20T12:01:00Z', somenteFalhas: false });
  const simular = (desde: string, maxEventos: number) => db().transaction((tx) => recuperar(tx, leitor, filtro(desde), { simulacao: true, maxEventos }));
  const um = await simular('2026-11-20T11:00:00Z', 1);
  assert.equal([um.pares.map((p) => p.event_id).sort(), um.proximoDesde], [[ids[0], ids[1]].sort(), instantes[2]], 'the first instant whole');
  const dois = await simular(instantes[2] ?? '', 2);
  assert.equal([dois.pares.map((p) => p.event_id).sort(), dois.proximoDesde], [[ids[2], ids[3]].sort(), instantes[4]]);
  const resto = await simular(instantes[4] ?? '', 2);
  assert.equal([resto.pares.map((p) => p.event_id), resto.proximoDesde], [[ids[4]], null]);
  assert.ok(resto.pares.every((p) => p.endpoint_id === endpoint.id));
});

test('every request received carried valid signatures', () => {
  assert.equal(receiver.unverified(), []);
});

test.run();
