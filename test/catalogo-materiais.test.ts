// GET /insumos/materiais and GET /canais: fields, cost data by permission, isolation and cost.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { criarCanal } from '#shared/db/canais.ts';
import { definirPermissoes } from '#shared/db/contas.ts';
import { alterarCor, criarCor, criarMaterial } from '#shared/db/materiais.ts';
import { sql } from '#shared/db/pool.ts';
import { PERMISSOES } from '#shared/domain/acesso.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { request } from './helpers/http.ts';
import { custosDasLeituras, planoMedidor } from './helpers/uso.ts';

const test = suite('catalog: materials and channels');
let app: TestApp;
let conta: TestAccount;
let pla: { id: string; cores: string[] };

const get = (path: string, token = conta.token) => request(`${app.baseUrl}${path}`, { token });
const semCustos = PERMISSOES.filter((p) => p !== 'custos.ver');

test.before(async () => {
  app = await startTestApp();
  conta = await createAccount(app.db.pool, { plano: await planoMedidor(app.db.pool) });
  const material = await criarMaterial(app.db.pool, conta.contaId, { nome: 'PLA', tipo: 'filamento', custoPorKgCentavos: 12000 });
  const preto = await criarCor(app.db.pool, conta.contaId, { materialId: material.id, nome: 'Preto', hex: '#111111' });
  const branco = await criarCor(app.db.pool, conta.contaId, { materialId: material.id, nome: 'Branco', hex: '#F5F5F5' });
  pla = { id: material.id, cores: [preto?.id ?? '', branco?.id ?? ''] };
  await criarMaterial(app.db.pool, conta.contaId, { nome: 'Resina padrão', tipo: 'resina', custoPorKgCentavos: 28000 });
});
test.after(async () => app.stop());

test('a material shows every field with its colors, and its cost per kg to a key whose creator holds custos.ver', async () => {
  const res = await get('/insumos/materiais');
  assert.is(res.status, 200);
  assert.is(res.body.proximo_cursor, null);
  const [material, resina] = res.body.dados;
  const { criado_em, atualizado_em, ...resto } = material;
  assert.equal(resto, {
    id: pla.id,
    nome: 'PLA',
    tipo: 'filamento',
    cores: [
      { id: pla.cores[0], nome: 'Preto', hex: '#111111', ativa: true },
      { id: pla.cores[1], nome: 'Branco', hex: '#F5F5F5', ativa: true },
    ],
    custo_por_kg_centavos: 12000,
  });
  assert.match(criado_em, /^\d{4}-\d{2}-\d{2}T/);
  assert.ok(atualizado_em >= criado_em);
  assert.equal(resina.cores, []);
  assert.is(resina.tipo, 'resina');
});

test('without custos.ver the cost field is absent, not null, and it goes as soon as the creator loses the permission', async () => {
  const semPermissao = await createAccount(app.db.pool, { permissoes: semCustos });
  await criarMaterial(app.db.pool, semPermissao.contaId, { nome: 'PETG', tipo: 'filamento', custoPorKgCentavos: 15000 });
  const res = await get('/insumos/materiais', semPermissao.token);
  assert.is(res.status, 200);
  assert.is(res.body.dados.length, 1);
  assert.not.ok('custo_por_kg_centavos' in res.body.dados[0]);
  assert.not.match(res.text, '15000');

  const perde = await createAccount(app.db.pool);
  await criarMaterial(app.db.pool, perde.contaId, { nome: 'ABS', tipo: 'filamento', custoPorKgCentavos: 9000 });
  assert.is((await get('/insumos/materiais', perde.token)).body.dados[0].custo_por_kg_centavos, 9000);
  await definirPermissoes(app.db.pool, perde.contaId, perde.usuarioId, semCustos);
  assert.not.ok('custo_por_kg_centavos' in (await get('/insumos/materiais', perde.token)).body.dados[0]);
});

test('a color change moves its material\'s atualizado_em, so atualizado_desde finds it', async () => {
  const marker = String(await app.db.pool.oneFirst(sql.unsafe`SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`));
  assert.equal((await get(`/insumos/materiais?atualizado_desde=${encodeURIComponent(marker)}`)).body.dados, []);
  await alterarCor(app.db.pool, conta.contaId, pla.cores[1] ?? '', { ativa: false });
  const res = await get(`/insumos/materiais?atualizado_desde=${encodeURIComponent(marker)}`);
  assert.equal(res.body.dados.map((m: { id: string }) => m.id), [pla.id]);
  assert.is(res.body.dados[0].cores[1].ativa, false);
});

test('materials and channels of another account never appear', async () => {
  const outra = await createAccount(app.db.pool);
  await criarMaterial(app.db.pool, outra.contaId, { nome: 'Material alheio', tipo: 'resina' });
  await criarCanal(app.db.pool, outra.contaId, { nome: 'Canal alheio', tipo: 'atacado' });
  await criarCanal(app.db.pool, conta.contaId, { nome: 'Canal próprio', tipo: 'loja_propria' });
  const materiais = await get('/insumos/materiais?limite=100');
  assert.is(materiais.body.dados.length, 2);
  assert.not.match(materiais.text, 'alheio');
  const canais = await get('/canais?limite=100');
  assert.equal(canais.body.dados.map((c: { nome: string }) => c.nome), ['Canal próprio']);
});

test('a channel shows every field', async () => {
  const nova = await createAccount(app.db.pool);
  const { id } = await criarCanal(app.db.pool, nova.contaId, { nome: 'Marketplace X', tipo: 'marketplace', taxaPercentualBps: 1650, ativo: false });
  const res = await get('/canais', nova.token);
  assert.is(res.status, 200);
  const { criado_em, atualizado_em, ...resto } = res.body.dados[0];
  assert.equal(resto, { id, nome: 'Marketplace X', tipo: 'marketplace', taxa_percentual_bps: 1650, ativo: false });
  assert.match(criado_em, /^\d{4}-\d{2}-\d{2}T/);
  assert.ok(atualizado_em >= criado_em);
});

test('materials page with cursors and reject unknown parameters', async () => {
  const first = await get('/insumos/materiais?limite=1');
  assert.is(first.body.dados.length, 1);
  assert.ok(first.body.proximo_cursor);
  const second = await get(`/insumos/materiais?limite=1&cursor=${first.body.proximo_cursor}`);
  assert.is(second.body.dados.length, 1);
  assert.is.not(second.body.dados[0].id, first.body.dados[0].id);
  assert.is((await get('/insumos/materiais?tipo=resina')).status, 400, 'no tipo filter on materials');
  assert.is((await get('/insumos/materiais?cursor=xyz')).status, 400);
});

test('lists cost 1 up to limite 25 and with one filter, 3 above 25 or with two filters', async () => {
  await get('/saude');
  const cases: [string, number][] = [
    ['/insumos/materiais', 1],
    ['/insumos/materiais?limite=25', 1],
    ['/insumos/materiais?limite=26', 3],
    ['/insumos/materiais?atualizado_desde=2020-01-01T00:00:00Z', 1],
    ['/canais?limite=100', 3],
  ];
  assert.equal(await custosDasLeituras(app, conta, get, cases), cases.map(([path, units]) => [path, units, units]));
});

test.run();
