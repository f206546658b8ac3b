import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { request } from './helpers/http.ts';
import { runOps, spawnOps } from './helpers/ops.ts';

const test = suite('operator CLI');
let app: TestApp;

test.before(async () => {
  app = await startTestApp();
});
test.after(async () => app.stop());

const ops = (...args: string[]) => runOps(app.db.url, args);
// The smoke tests of the real process: one command of each family runs as an operator runs it.
const spawned = (...args: string[]) => spawnOps(app.db.url, args);

test('creates an account, a user and a key whose token works once shown', async () => {
  const conta = await ops('contas', 'create', '--nome', 'Farm do CLI', '--plano', 'bancada');
  assert.is(conta.code, 0, conta.stderr);
  assert.is(conta.json.plano_id, 'bancada');
  const usuario = await ops('usuarios', 'add', '--conta', conta.json.id, '--nome', 'Op', '--email', 'op@cli.invalid', '--permissoes', 'producao.ver,cotacoes.ver');
  assert.is(usuario.code, 0, usuario.stderr);
  assert.equal(usuario.json.permissoes, ['producao.ver', 'cotacoes.ver']);
  const chave = await spawned('chaves', 'create', '--conta', conta.json.id, '--usuario', usuario.json.id, '--nome', 'integração', '--escopos', 'pedidos:ler');
  assert.is(chave.code, 0, chave.stderr);
  assert.match(chave.json.token, /^chv_[A-Za-z0-9]{8}_[A-Za-z0-9_-]{43}$/);
  assert.is(chave.json.prefixo, chave.json.token.slice(4, 12));

  const res = await request(`${app.baseUrl}/conta`, { token: chave.json.token });
  assert.is(res.status, 200);
  assert.is(res.body.chave.id, chave.json.id);

  const listed = await ops('chaves', 'list', '--conta', conta.json.id);
  assert.is(listed.code, 0);
  assert.not.match(JSON.stringify(listed.json), chave.json.token.slice(13), 'the token is never shown again');

  const revoked = await ops('chaves', 'revoke', '--conta', conta.json.id, '--chave', chave.json.id);
  assert.is(revoked.code, 0, revoked.stderr);
  assert.ok(revoked.json.revogada_em);
  assert.is((await request(`${app.baseUrl}/conta`, { token: chave.json.token })).status, 401);
});

test('refuses a key beyond the plan with a clear error', async () => {
  const conta = await ops('contas', 'create', '--nome', 'Limite', '--plano', 'bancada');
  const usuario = await ops('usuarios', 'add', '--conta', conta.json.id, '--nome', 'Op', '--email', 'lim@cli.invalid');
  for (let i = 0; i < 2; i++) {
    assert.is((await ops('chaves', 'create', '--conta', conta.json.id, '--usuario', usuario.json.id, '--nome', `k${i}`)).code, 0);
  }
  const third = await ops('chaves', 'create', '--conta', conta.json.id, '--usuario', usuario.json.id, '--nome', 'k3');
  assert.is(third.code, 1);
  assert.match(third.stderr, 'the plan allows 2 active API keys');
});

test('rejects bad options naming them, and unknown commands', async () => {
  const bad = await ops('usuarios', 'add', '--conta', 'nope', '--nome', 'x', '--email', 'x@y.z', '--permissoes', 'voar');
  assert.is(bad.code, 64);
  assert.match(bad.stderr, '--conta');
  assert.match(bad.stderr, '--permissoes');
  const unknown = await spawned('naves', 'launch');
  assert.is(unknown.code, 64);
  assert.match(unknown.stderr, 'unknown command');
});

test('loads the demo data once and prints a working key each time', async () => {
  const first = await spawned('demo', 'load');
  assert.is(first.code, 0, first.stderr);
  assert.is(first.json.loaded, true);
  const second = await ops('demo', 'load');
  assert.is(second.json.loaded, false);
  for (const token of [first.json.token, second.json.token]) assert.match(token, /^chv_/);
  assert.is((await request(`${app.baseUrl}/saude`, { token: second.json.token })).status, 200);
  assert.is((await request(`${app.baseUrl}/saude`, { token: first.json.token })).status, 401, 'an earlier demo key is revoked');
});

test.run();
