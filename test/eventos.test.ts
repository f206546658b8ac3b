// The event log (issue 19, items 1 and 2): GET /eventos, GET /eventos/{id}, GET /eventos/{id}/entregas
// and POST /eventos/{id}/reenviar, against a real worker relaying and delivering to a real receiver
// that verifies every signature.
import { randomUUID } from 'node:crypto';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { criarChave } from '#shared/db/chaves.ts';
import { criarUsuario } from '#shared/db/contas.ts';
import { freePort } from '#shared/db/embedded.ts';
import { sql } from '#shared/db/pool.ts';
import { archiveEnded, FROM_THE_START } from '#shared/db/archive.ts';
import { purge, RETENTION } from '#shared/db/retention.ts';
import { criarEndpoint } from '#shared/db/webhooks.ts';
import { DESCRICAO_ESCOPO, PERMISSOES, type Escopo, type Permissao } from '#shared/domain/acesso.ts';
import { TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, createPlan, type TestAccount } from './helpers/fixtures.ts';
import { client, request, type TestResponse } from './helpers/http.ts';
import { closeGroupingWindows, emit, eventually, makeDue, startReceiver, type Receiver } from './helpers/receiver.ts';
import { awayFromHourBoundary, custosDasLeituras, lerUso, planoMedidor, settled } from './helpers/uso.ts';

const test = suite('event log: list, read, delivery attempts and redelivery');
let app: TestApp;
let receiver: Receiver;
let outra: TestAccount;
let eventoDaOutra: string;
let endpointDaOutra: string;

test.before(async () => {
  receiver = await startReceiver();
  app = await startTestApp({ worker: true });
  outra = await createAccount(app.db.pool);
  endpointDaOutra = (await endpoint(outra, '/outra')).id;
  eventoDaOutra = await cotacaoAprovada(outra.contaId);
  await receiver.waitFor(1, (r) => r.id === eventoDaOutra);
});
test.after(async () => {
  await app.stop();
  await receiver.close();
});

const db = () => app.db.pool;
const api = (token: string) => client(app.baseUrl, token);
const chave = (n: number) => `eventos-${n}-${randomUUID()}`;

const cotacaoAprovada = (contaId: string) => emit(db(), contaId, 'cotacao.aprovada', { objeto: 'cotacao', id: randomUUID(), codigo: 'COT-000001' });
const pedidoCriado = (contaId: string) => emit(db(), contaId, 'pedido_producao.criado', { objeto: 'pedido_producao', id: randomUUID(), codigo: 'OP-000001', tipo: 'estoque' });

/** An endpoint of the account created by `usuarioId` (the account's own user by default), wired to the receiver. */
async function endpoint(conta: TestAccount, path: string, options: { usuarioId?: string; tipos?: string[]; descricao?: string; url?: string } = {}) {
  const created = await criarEndpoint(db(), {
    contaId: conta.contaId, usuarioId: options.usuarioId ?? conta.usuarioId, url: options.url ?? receiver.url(path),
    tipos: options.tipos ?? [], descricao: options.descricao ?? null,
  });
  receiver.setSecrets(path, created.segredo);
  return created;
}

/** Another user of the account, with these permissions, and a key of theirs. */
async function pessoa(conta: TestAccount, permissoes: readonly Permissao[], escopos: readonly Escopo[] = ['eventos:ler', 'eventos:reenviar']) {
  const usuario = await criarUsuario(db(), { contaId: conta.contaId, nome: 'Outra pessoa', email: `p${randomUUID()}@teste.invalid`, permissoes });
  const { chave: key, token } = await criarChave(db(), { contaId: conta.contaId, usuarioId: usuario.id, nome: 'chave', escopos });
  return { usuarioId: usuario.id, chaveId: key.id, token };
}

/** Waits until the worker has relayed these events (they enter the log then). */
async function relayed(...ids: string[]): Promise<void> {
  const count = () => db().oneFirst(sql.type(z.object({ n: z.number() }))`
    SELECT count(*)::int AS n FROM outbox WHERE id = ANY (${sql.array(ids, 'uuid')}) AND relayed_at IS NOT NULL`);
  assert.is(await eventually(count, (n) => n === ids.length), ids.length, 'the events were relayed');
}

const Entrega = z.object({ id: z.string(), endpoint_id: z.string(), status: z.string(), attempts: z.number(), lease_id: z.string().nullable(), next_attempt_at: z.string() });
const entregas = (eventId: string) => db().any(sql.type(Entrega)`
  SELECT id, endpoint_id, status, attempts, lease_id, next_attempt_at FROM deliveries WHERE event_id = ${eventId} ORDER BY endpoint_id`);
/** Every delivery of the event has an outcome, and none is enqueued. */
const settledDeliveries = (eventId: string, n: number) =>
  eventually(() => entregas(eventId), (d) => d.length === n && d.every((x) => x.lease_id === null && x.attempts > 0));

/** Every page of a list, following proximo_cursor. */
async function allPages(token: string, path: string): Promise<any[]> {
  const items: any[] = [];
  let next: string | null = path;
  while (next) {
    const res: TestResponse = await api(token).get(next);
    assert.is(res.status, 200, res.text);
    items.push(...res.body.dados);
    const cursor: string | null = res.body.proximo_cursor;
    next = cursor ? `${path}${path.includes('?') ? '&' : '?'}cursor=${cursor}` : null;
  }
  return items;
}

test('an event reads, byte for byte, as the body its webhook delivered; the list shows it newest first', async () => {
  const conta = await createAccount(db());
  await endpoint(conta, '/envelope');
  const ids = [await cotacaoAprovada(conta.contaId), await pedidoCriado(conta.contaId)];
  ids.push(await emit(db(), conta.contaId, 'estoque.baixo', { objeto: 'insumo', insumo: { tipo: 'material_cor', id: randomUUID() }, abaixo_do_minimo: true }));
  const delivered = await receiver.waitFor(3, (r) => ids.includes(r.id));
  for (const r of delivered) {
    assert.ok(r.verified);
    const res = await api(conta.token).get(`/eventos/${r.id}`);
    assert.is(res.status, 200);
    assert.is(res.text, r.body, `GET /eventos/${r.id} is the delivered body`);
  }
  const listed = await api(conta.token).get('/eventos');
  assert.equal(listed.body.dados.map((e: { id: string }) => e.id), [...ids].reverse(), 'newest first');
  assert.equal(listed.body.dados.map((e: unknown) => JSON.stringify(e)), [...ids].reverse().map((id) => delivered.find((r) => r.id === id)?.body));
});

test('a key sees exactly the events an endpoint of its creator receives, by the permissions the creator holds now', async () => {
  const conta = await createAccount(db());
  // Catalog and supplies only: no quotations, no production.
  const p = await pessoa(conta, ['produtos.ver', 'estoque_insumos.ver'], ['eventos:ler']);
  const seu = await endpoint(conta, '/visao', { usuarioId: p.usuarioId });
  const ids: Record<string, string> = {};
  for (const tipo of TIPOS_DE_EVENTO) {
    const dados = { objeto: tipo.objeto, id: randomUUID(), variacao_id: randomUUID(), codigo: 'X-1' };
    ids[tipo.tipo] = await emit(db(), conta.contaId, tipo.tipo, dados, tipo.tipo === 'webhook.teste' ? seu.id : null);
  }
  await closeGroupingWindows(db());
  await relayed(...Object.values(ids));
  const esperados = TIPOS_DE_EVENTO.filter((t) => t.permissao === null || ['produtos.ver', 'estoque_insumos.ver'].includes(t.permissao));
  const recebidos = await receiver.waitFor(esperados.length, (r) => r.path === '/visao');
  const vistos = await allPages(p.token, '/eventos?limite=100');
  assert.equal(new Set(vistos.map((e) => e.id)), new Set(recebidos.map((r) => r.id)), 'the log shows what the endpoint received');
  assert.equal(new Set(vistos.map((e) => e.tipo)), new Set(esperados.map((t) => t.tipo)));
  assert.is((await api(p.token).get(`/eventos/${ids['cotacao.aprovada']}`)).status, 404, 'a type the creator may not see is 404');
  const etag = (await api(conta.token).get(`/eventos/${ids['cotacao.aprovada']}`)).headers.get('etag') ?? '';
  const comTag = await request(`${app.baseUrl}/eventos/${ids['cotacao.aprovada']}`, { token: p.token, headers: { 'if-none-match': etag } });
  assert.is(comTag.status, 404, 'even with its ETag: not a 304');
  assert.is((await api(p.token).get(`/eventos/${ids['cotacao.aprovada']}/entregas`)).status, 404);
  // The account's own key, whose creator holds every permission, sees every one of them.
  assert.is((await allPages(conta.token, '/eventos?limite=100')).length, TIPOS_DE_EVENTO.length);

  // A permission taken away hides its events at once; a deactivated creator's key holds nothing:
  // 403, as on every scoped route (test/auth.test.ts), not a page of webhook.teste alone.
  await db().query(sql.unsafe`UPDATE usuarios SET permissoes = '{produtos.ver}' WHERE id = ${p.usuarioId}`);
  assert.is((await api(p.token).get(`/eventos/${ids['estoque.baixo']}`)).status, 404);
  assert.ok(!(await allPages(p.token, '/eventos')).some((e) => e.tipo === 'estoque.baixo'));
  await db().query(sql.unsafe`UPDATE usuarios SET ativo = false WHERE id = ${p.usuarioId}`);
  const recusa = await api(p.token).get('/eventos');
  assert.equal([recusa.status, recusa.body.codigo], [403, 'escopo_insuficiente']);
});

test('an event enters the log when it is relayed: a grouped event still in its window is not there yet', async () => {
  const conta = await createAccount(db());
  const id = await emit(db(), conta.contaId, 'estoque.movimentado', { objeto: 'estoque', variacao_id: randomUUID(), local_id: randomUUID(), tipo: 'entrada' });
  assert.is((await api(conta.token).get(`/eventos/${id}`)).status, 404);
  assert.equal((await api(conta.token).get('/eventos')).body.dados, []);
  await closeGroupingWindows(db());
  await relayed(id);
  assert.is((await api(conta.token).get(`/eventos/${id}`)).status, 200);
  assert.equal((await api(conta.token).get('/eventos')).body.dados.map((e: { id: string }) => e.id), [id]);
});

test('an event has an ETag for good: an If-None-Match with it is a 304, free in the month even at its ceiling', async () => {
  const conta = await createAccount(db());
  const id = await cotacaoAprovada(conta.contaId);
  await relayed(id);
  const first = await api(conta.token).get(`/eventos/${id}`);
  const etag = first.headers.get('etag') ?? '';
  assert.match(etag, /^"1-[\w-]+"$/);
  await db().query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls)
    SELECT c.id, date_trunc('month', now() AT TIME ZONE 'UTC')::date, p.chamadas_por_mes FROM contas c JOIN planos p ON p.id = c.plano_id
     WHERE c.id = ${conta.contaId}
    ON CONFLICT (conta_id, month) DO UPDATE SET calls = excluded.calls`);
  await db().query(sql.unsafe`DELETE FROM month_advances WHERE conta_id = ${conta.contaId}`);
  const again = await request(`${app.baseUrl}/eventos/${id}`, { token: conta.token, headers: { 'if-none-match': etag } });
  assert.equal([again.status, again.headers.get('etag')], [304, etag]);
  assert.is((await api(conta.token).get(`/eventos/${id}`)).status, 429, 'without the tag: the month is spent');
});

test('filters by tipo, criado_desde (inclusive) and criado_ate (exclusive, as every list of history); pages newest first through every event once, ties broken by id', async () => {
  const conta = await createAccount(db());
  const ids = [];
  for (let i = 0; i < 6; i++) ids.push(await (i % 2 ? pedidoCriado(conta.contaId) : cotacaoAprovada(conta.contaId)));
  await relayed(...ids);
  // Minutes apart, oldest first; the last two at the same instant.
  const at = (i: number) => new Date(Date.UTC(2020, 0, 20, 12, Math.min(i, 4))).toISOString();
  for (const [i, id] of ids.entries()) await db().query(sql.unsafe`UPDATE outbox SET criado_em = ${at(i)} WHERE id = ${id}`);
  const newestFirst = [ids[5], ids[4]].sort().reverse().concat([ids[3], ids[2], ids[1], ids[0]]);

  const paged = await allPages(conta.token, '/eventos?limite=1');
  assert.equal(paged.map((e) => e.id), newestFirst);
  assert.equal((await allPages(conta.token, '/eventos?tipo=pedido_producao.criado&limite=2')).map((e) => e.id), [ids[5], ids[3], ids[1]]);
  assert.equal((await allPages(conta.token, `/eventos?criado_desde=${at(2)}`)).map((e) => e.id), newestFirst.slice(0, 4));
  assert.equal((await allPages(conta.token, `/eventos?criado_ate=${at(2)}`)).map((e) => e.id), [ids[1], ids[0]]);
  assert.equal((await allPages(conta.token, `/eventos?criado_desde=${at(1)}&criado_ate=${at(3)}&tipo=cotacao.aprovada`)).map((e) => e.id), [ids[2]]);

  // A page boundary holds while newer events arrive: nothing skipped, nothing repeated.
  const first = await api(conta.token).get('/eventos?limite=3');
  await relayed(await cotacaoAprovada(conta.contaId));
  const rest = await allPages(conta.token, `/eventos?limite=3&cursor=${first.body.proximo_cursor}`);
  assert.equal([...first.body.dados, ...rest].map((e) => e.id), newestFirst);
});

test('refuses a range that ends before it starts, atualizado_desde, and a cursor of another list or query (400)', async () => {
  const conta = await createAccount(db());
  for (let i = 0; i < 2; i++) await relayed(await cotacaoAprovada(conta.contaId));
  const invertido = await api(conta.token).get('/eventos?criado_desde=2026-11-20T12:00:00Z&criado_ate=2026-11-20T11:59:59Z');
  assert.is(invertido.status, 400);
  assert.equal(invertido.body.erros, [{ campo: 'criado_ate', mensagem: 'anterior a criado_desde' }]);
  const atualizado = await api(conta.token).get('/eventos?atualizado_desde=2026-11-20T12:00:00Z');
  assert.is(atualizado.status, 400);
  assert.equal(atualizado.body.erros, [{ campo: 'atualizado_desde', mensagem: 'parâmetro desconhecido' }]);
  const filtrado = await api(conta.token).get('/eventos?limite=1&tipo=cotacao.aprovada');
  assert.is((await api(conta.token).get(`/eventos?limite=1&cursor=${filtrado.body.proximo_cursor}`)).status, 400, 'a cursor of another query');
  const canais = await api(conta.token).get(`/canais?cursor=${filtrado.body.proximo_cursor}`);
  assert.is(canais.status, 400, 'a cursor of another list');
  assert.is((await api(conta.token).get('/eventos?tipo=cotacao.voou')).status, 400);
});

test('costs per §8.2: 1 for a page or an event, 3 for two filters or limite above 25; a redelivery 2 (write)', async () => {
  const conta = await createAccount(db(), { plano: await planoMedidor(db()) });
  const id = await cotacaoAprovada(conta.contaId);
  await relayed(id);
  const cases: [string, number][] = [
    ['/eventos', 1],
    ['/eventos?tipo=cotacao.aprovada', 1],
    ['/eventos?tipo=cotacao.aprovada&criado_desde=2026-01-01T00:00:00Z', 3],
    ['/eventos?criado_desde=2026-01-01T00:00:00Z&criado_ate=2099-01-01T00:00:00Z', 3],
    ['/eventos?limite=26', 3],
    [`/eventos/${id}`, 1],
    [`/eventos/${id}/entregas`, 1],
    [`/eventos/${id}/entregas?limite=100`, 3],
  ];
  const get = (path: string) => api(conta.token).get(path);
  await get('/saude'); // the key's bucket exists from its first call on
  assert.equal(await custosDasLeituras(app, conta, get, cases), cases.map(([path, units]) => [path, units, units]));
  await endpoint(conta, '/custo');
  await settled(app);
  const antes = await lerUso(db(), conta.contaId, conta.chaveId);
  assert.is((await api(conta.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': chave(1) })).status, 202);
  await settled(app);
  assert.is((await lerUso(db(), conta.contaId, conta.chaveId)).mes - antes.mes, 2);
});

test('delivery attempts: endpoint, number, time, status or error, duration and the kept 4 KB of the answer, newest first; never a secret or URL', async () => {
  const conta = await createAccount(db());
  const erp = await endpoint(conta, '/tentativas', { descricao: 'ERP da loja', tipos: ['cotacao.aprovada'] });
  const fechada = await freePort();
  const morto = await endpoint(conta, '/morto', { url: `http://127.0.0.1:${fechada}/hook`, tipos: ['cotacao.aprovada'] });
  let falhas = 1;
  receiver.respond((r) => (r.path === '/tentativas' && falhas-- > 0 ? { status: 500, body: 'é'.repeat(3000) } : { status: 200, body: '{"recebido":true}' }));
  const id = await cotacaoAprovada(conta.contaId);
  await receiver.waitFor(1, (r) => r.id === id);
  const [primeira] = await eventually(() => entregas(id), (d) => d.length === 2 && d.every((x) => x.attempts === 1 && x.lease_id === null));
  assert.ok(primeira);
  await makeDue(db(), { deliveryId: (await entregas(id)).find((d) => d.endpoint_id === erp.id)?.id });
  await receiver.waitFor(2, (r) => r.id === id);
  await eventually(() => entregas(id), (d) => d.some((x) => x.endpoint_id === erp.id && x.status === 'succeeded'));
  receiver.respond(() => ({ status: 200, body: 'ok' }));

  const res = await api(conta.token).get(`/eventos/${id}/entregas`);
  assert.is(res.status, 200);
  const doErp = res.body.dados.filter((t: { endpoint_id: string }) => t.endpoint_id === erp.id);
  assert.equal(doErp.map((t: any) => [t.tentativa, t.sucesso, t.status_http, t.erro, t.endpoint_descricao]), [
    [2, true, 200, null, 'ERP da loja'],
    [1, false, 500, null, 'ERP da loja'],
  ]);
  assert.is(doErp[0].resposta, '{"recebido":true}');
  assert.is(Buffer.byteLength(doErp[1].resposta), 4096, 'the first 4 KB, as kept');
  assert.ok(doErp.every((t: any) => Number.isInteger(t.duracao_ms) && t.duracao_ms >= 0 && !Number.isNaN(Date.parse(t.iniciada_em))));
  assert.ok(Date.parse(doErp[0].iniciada_em) > Date.parse(doErp[1].iniciada_em), 'newest first');
  const [semResposta] = res.body.dados.filter((t: { endpoint_id: string }) => t.endpoint_id === morto.id);
  assert.is(semResposta.status_http, null);
  assert.is(semResposta.resposta, null);
  assert.match(semResposta.erro, 'ECONNREFUSED');
  for (const segredo of [erp.segredo, morto.segredo, erp.url, morto.url]) assert.not.ok(res.text.includes(segredo), 'no secret or URL');
});

test('delivery attempts page through every attempt once, attempts of the same instant included', async () => {
  const conta = await createAccount(db());
  await endpoint(conta, '/paginas');
  const id = await cotacaoAprovada(conta.contaId);
  const [entrega] = await settledDeliveries(id, 1);
  assert.ok(entrega);
  await db().query(sql.unsafe`
    INSERT INTO delivery_attempts (conta_id, delivery_id, attempt, started_at, duration_ms, succeeded, response_status)
    SELECT ${conta.contaId}, ${entrega.id}, n, '2020-01-20T12:00:00Z', 10, false, 503 FROM generate_series(2, 6) n`);
  const todas = await allPages(conta.token, `/eventos/${id}/entregas?limite=2`);
  assert.is(todas.length, 6);
  assert.equal(todas.map((t) => t.tentativa).sort(), [1, 2, 3, 4, 5, 6]);
  assert.is(todas[0].tentativa, 1, 'the real attempt is the newest');
  // A cursor is bound to its event's attempts: another event's list refuses it.
  const outro = await cotacaoAprovada(conta.contaId);
  await settledDeliveries(outro, 1);
  const pagina = await api(conta.token).get(`/eventos/${id}/entregas?limite=2`);
  const alheio = await api(conta.token).get(`/eventos/${outro}/entregas?limite=2&cursor=${pagina.body.proximo_cursor}`);
  assert.is(alheio.status, 400);
  assert.equal(alheio.body.erros.map((e: { campo: string }) => e.campo), ['cursor']);
});

test('redelivery: the original webhook-id and body to every active endpoint that subscribes and whose creator may receive it, or to one', async () => {
  const conta = await createAccount(db());
  const semCotacoes = await pessoa(conta, ['producao.ver']);
  const todos = await endpoint(conta, '/todos', { descricao: 'Todos' });
  const cotacoes = await endpoint(conta, '/cotacoes', { descricao: 'Cotações', tipos: ['cotacao.aprovada'] });
  const outroTipo = await endpoint(conta, '/outro-tipo', { tipos: ['pedido_producao.criado'] });
  const desligado = await endpoint(conta, '/desligado');
  const deixou = await endpoint(conta, '/deixou');
  const semPermissao = await endpoint(conta, '/sem-permissao', { usuarioId: semCotacoes.usuarioId });
  const id = await cotacaoAprovada(conta.contaId);
  const [original] = await receiver.waitFor(1, (r) => r.id === id && r.path === '/todos');
  await settledDeliveries(id, 4);
  await db().query(sql.unsafe`UPDATE webhook_endpoints SET tipos = '{pedido_producao.criado}' WHERE id = ${deixou.id}`);
  await db().query(sql.unsafe`UPDATE webhook_endpoints SET ativo = false, desativado_em = now(), desativado_motivo = 'operador' WHERE id = ${desligado.id}`);
  // Delivered to /desligado, now disabled, and to /deixou, which no longer subscribes to the type: each
  // keeps its delivery as it was, and gets no redelivery.
  assert.equal((await entregas(id)).map((d) => d.endpoint_id).sort(), [todos.id, cotacoes.id, desligado.id, deixou.id].sort());

  const res = await api(conta.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': chave(2) });
  assert.is(res.status, 202, res.text);
  assert.equal(res.body.evento_id, id);
  assert.equal(res.body.entregas.map((e: any) => [e.endpoint_id, e.endpoint_descricao, e.situacao]),
    [[todos.id, 'Todos', 'pendente'], [cotacoes.id, 'Cotações', 'pendente']].sort((a, b) => String(a[0]).localeCompare(String(b[0]))));
  assert.equal(res.body.entregas_por_hora.limite, 5000);
  const again = await receiver.waitFor(2, (r) => r.id === id && r.path === '/todos');
  await receiver.waitFor(2, (r) => r.id === id && r.path === '/cotacoes');
  assert.ok(again.every((r) => r.verified));
  assert.is(again[1]?.body, original?.body, 'the same body under the same webhook-id');
  await settledDeliveries(id, 4);
  assert.equal(receiver.received.filter((r) => r.id === id).map((r) => r.path).sort(), ['/cotacoes', '/cotacoes', '/deixou', '/desligado', '/todos', '/todos']);
  const estado = new Map((await entregas(id)).map((d) => [d.endpoint_id, [d.status, d.attempts]]));
  assert.equal([todos, cotacoes, desligado, deixou].map((e) => estado.get(e.id)), [['succeeded', 2], ['succeeded', 2], ['succeeded', 1], ['succeeded', 1]]);
  assert.not.ok(receiver.received.some((r) => r.id === id && ['/outro-tipo', '/sem-permissao'].includes(r.path)));

  // One named endpoint.
  const one = await api(conta.token).post(`/eventos/${id}/reenviar`, { endpoint_id: todos.id }, { 'idempotency-key': chave(3) });
  assert.is(one.status, 202);
  assert.equal(one.body.entregas.map((e: any) => e.endpoint_id), [todos.id]);
  await receiver.waitFor(3, (r) => r.id === id && r.path === '/todos');
  await settledDeliveries(id, 4);
  assert.is(receiver.received.filter((r) => r.id === id && r.path === '/cotacoes').length, 2, 'only the named endpoint');

  // Named endpoints that do not receive it, and ones that are not the account's: 422, nothing scheduled.
  const before = await entregas(id);
  for (const [endpointId, motivo] of [[desligado.id, 'sem_destino'], [outroTipo.id, 'sem_destino'], [semPermissao.id, 'sem_destino'],
    [deixou.id, 'sem_destino'], [endpointDaOutra, 'referencia_invalida'], [randomUUID(), 'referencia_invalida']] as const) {
    const refused = await api(conta.token).post(`/eventos/${id}/reenviar`, { endpoint_id: endpointId }, { 'idempotency-key': chave(4) });
    assert.is(refused.status, 422, `${endpointId}: ${refused.text}`);
    assert.is(refused.body.motivo, motivo);
  }
  assert.equal(await entregas(id), before, 'a refusal scheduled nothing');
});

test('redelivery answers its Idempotency-Key: a repetition replays the 202 and schedules nothing; another body is a conflict', async () => {
  const conta = await createAccount(db());
  const erp = await endpoint(conta, '/idem');
  const id = await cotacaoAprovada(conta.contaId);
  await settledDeliveries(id, 1);
  const key = chave(5);
  const first = await api(conta.token).post(`/eventos/${id}/reenviar`, { endpoint_id: erp.id }, { 'idempotency-key': key });
  assert.is(first.status, 202);
  await receiver.waitFor(2, (r) => r.id === id);
  await eventually(() => entregas(id), (d) => d[0]?.status === 'succeeded' && d[0].attempts === 2);
  const repeated = await api(conta.token).post(`/eventos/${id}/reenviar`, { endpoint_id: erp.id }, { 'idempotency-key': key });
  assert.is(repeated.status, 202);
  assert.is(repeated.headers.get('idempotent-replayed'), 'true');
  assert.equal(repeated.body.entregas.map((e: any) => [e.id, e.situacao, e.proxima_tentativa_em]), [[first.body.entregas[0].id, 'entregue', null]]);
  assert.equal((await entregas(id)).map((d) => [d.status, d.attempts]), [['succeeded', 2]], 'nothing scheduled again');
  const conflict = await api(conta.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': key });
  assert.is(conflict.status, 422);
  assert.is(conflict.body.codigo, 'idempotencia_conflito');
  const semChave = await api(conta.token).post(`/eventos/${id}/reenviar`, {});
  assert.is(semChave.status, 400);
  assert.equal(semChave.body.erros.map((e: { campo: string }) => e.campo), ['idempotency-key']);
  const semEndpoints = await createAccount(db());
  const solto = await cotacaoAprovada(semEndpoints.contaId);
  await relayed(solto);
  const nenhum = await api(semEndpoints.token).post(`/eventos/${solto}/reenviar`, {}, { 'idempotency-key': chave(6) });
  assert.is(nenhum.status, 422);
  assert.is(nenhum.body.motivo, 'sem_destino');
});

test("redelivery counts against the account's hourly cap: over it, the delivery waits for the next hour", async () => {
  await createPlan(db(), 'dois_por_hora', { entregas_webhook_por_hora: 2 });
  // Every delivery of the test in one hour, the one its counter and nextHour name.
  await awayFromHourBoundary(db());
  const conta = await createAccount(db(), { plano: 'dois_por_hora' });
  await endpoint(conta, '/teto');
  const id = await cotacaoAprovada(conta.contaId);
  const [entrega] = await settledDeliveries(id, 1);
  const uso = () => db().oneFirst(sql.type(z.object({ entregas: z.number() }))`
    SELECT coalesce((SELECT deliveries FROM webhook_hourly_usage WHERE conta_id = ${conta.contaId} AND hour = date_trunc('hour', now(), 'UTC')), 0) AS entregas`);
  assert.is(await uso(), 1);
  const sent = await api(conta.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': chave(7) });
  assert.is(sent.status, 202);
  assert.equal(sent.body.entregas_por_hora, { limite: 2, usadas: 1 });
  await receiver.waitFor(2, (r) => r.id === id);
  assert.is(await eventually(uso, (n) => n === 2), 2, 'the redelivery counted');
  // Its outcome recorded: a replay leaves a delivery still under a worker's lease as it is.
  await eventually(() => entregas(id), (d) => d[0]?.status === 'succeeded' && d[0].lease_id === null);

  const held = await api(conta.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': chave(8) });
  assert.equal(held.body.entregas_por_hora, { limite: 2, usadas: 2 });
  const nextHour = new Date();
  nextHour.setUTCMinutes(0, 0, 0);
  nextHour.setUTCHours(nextHour.getUTCHours() + 1);
  const [waiting] = await eventually(() => entregas(id), (d) => d[0]?.lease_id === null && Date.parse(d[0].next_attempt_at) === nextHour.getTime());
  assert.equal([waiting?.status, waiting?.attempts, Date.parse(waiting?.next_attempt_at ?? '')], ['pending', 2, nextHour.getTime()], 'held, not attempted');
  assert.is(receiver.received.filter((r) => r.id === id).length, 2);
  // The hour is over: the held redelivery goes out.
  await db().query(sql.unsafe`UPDATE webhook_hourly_usage SET hour = hour - interval '1 hour' WHERE conta_id = ${conta.contaId}`);
  assert.is(await makeDue(db(), { deliveryId: entrega?.id }), 1);
  await receiver.waitFor(3, (r) => r.id === id);
  assert.is(await eventually(uso, (n) => n === 1), 1);
});

test("another account's event is 404 on every route, and never listed; nothing is scheduled for it", async () => {
  const conta = await createAccount(db());
  await endpoint(conta, '/isolamento');
  for (const path of [`/eventos/${eventoDaOutra}`, `/eventos/${eventoDaOutra}/entregas`]) {
    const res = await api(conta.token).get(path);
    assert.is(res.status, 404, path);
    assert.is(res.body.codigo, 'nao_encontrado');
  }
  const before = await entregas(eventoDaOutra);
  const post = await api(conta.token).post(`/eventos/${eventoDaOutra}/reenviar`, {}, { 'idempotency-key': chave(9) });
  assert.is(post.status, 404);
  assert.equal(await entregas(eventoDaOutra), before);
  await relayed(await cotacaoAprovada(conta.contaId));
  assert.not.ok((await allPages(conta.token, '/eventos')).some((e) => e.id === eventoDaOutra));
  assert.is((await api(outra.token).get(`/eventos/${eventoDaOutra}`)).status, 200, 'its own account reads it');
});

test('scopes: eventos:ler reads the log and the attempts, eventos:reenviar redelivers (403 without)', async () => {
  const conta = await createAccount(db());
  await endpoint(conta, '/escopos');
  const id = await cotacaoAprovada(conta.contaId);
  await relayed(id);
  const leitor = await pessoa(conta, PERMISSOES, ['eventos:ler']);
  const reenviador = await pessoa(conta, PERMISSOES, ['eventos:reenviar']);
  for (const path of ['/eventos', `/eventos/${id}`, `/eventos/${id}/entregas`]) {
    assert.is((await api(leitor.token).get(path)).status, 200, path);
    const refused = await api(reenviador.token).get(path);
    assert.is(refused.status, 403, path);
    assert.is(refused.body.codigo, 'escopo_insuficiente');
  }
  assert.is((await api(leitor.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': chave(10) })).status, 403);
  assert.is((await api(reenviador.token).post(`/eventos/${id}/reenviar`, {}, { 'idempotency-key': chave(11) })).status, 202);
  // The reference names both scopes, with what they allow, and each operation's.
  const documento = (await request(`${app.baseUrl}/openapi.json`)).body;
  for (const escopo of ['eventos:ler', 'eventos:reenviar'] as const) {
    assert.match(documento.components.securitySchemes.chaveApi.description, `${escopo} (${DESCRICAO_ESCOPO[escopo]})`);
  }
  assert.equal(['/eventos', '/eventos/{id}', '/eventos/{id}/entregas'].map((p) => documento.paths[p].get['x-escopo']), ['eventos:ler', 'eventos:ler', 'eventos:ler']);
  assert.is(documento.paths['/eventos/{id}/reenviar'].post['x-escopo'], 'eventos:reenviar');
});

/** What the worker's maintenance does to events: archives what has ended, and purges the archive's expired rows. */
async function archiveAndPurge(): Promise<void> {
  await archiveEnded(db(), FROM_THE_START);
  await purge(db(), 'outbox_archive');
}

test(`events are kept as long as the outbox keeps them (${RETENTION.outboxDays} days), and the reference says so`, async () => {
  const conta = await createAccount(db());
  const velho = await cotacaoAprovada(conta.contaId);
  const recente = await cotacaoAprovada(conta.contaId);
  await relayed(velho, recente);
  await db().query(sql.unsafe`UPDATE outbox SET relayed_at = now() - make_interval(days => ${RETENTION.outboxDays} + 1) WHERE id = ${velho}`);
  await db().query(sql.unsafe`UPDATE outbox SET relayed_at = now() - make_interval(days => ${RETENTION.outboxDays} - 1) WHERE id = ${recente}`);
  await archiveAndPurge();
  assert.is((await api(conta.token).get(`/eventos/${velho}`)).status, 404);
  assert.is((await api(conta.token).get(`/eventos/${recente}`)).status, 200);
  assert.equal((await allPages(conta.token, '/eventos')).map((e) => e.id), [recente]);
  const documento = await request(`${app.baseUrl}/openapi.json`);
  for (const op of [documento.body.paths['/eventos'].get, documento.body.paths['/eventos/{id}'].get]) {
    assert.match(op.description, `${RETENTION.outboxDays} dias`);
  }
});

test('every request received carried valid signatures', () => {
  assert.equal(receiver.unverified(), []);
});

test.run();
