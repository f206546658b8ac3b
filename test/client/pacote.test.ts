// The official client as it is published: `npm pack` (the prepack script compiles src/ to JS and
// .d.ts) and what the tarball holds; its package.json (name, semver, exports, types, files, license,
// engines, bin); its types generated from docs/openapi.json; then installed in a consumer folder
// and run there, under the oldest Node its engines accept (20, the system's, when there is one) and
// under the project's 24: a typed program type-checked against the published .d.ts, real calls to a
// real service, and the `printfarm escutar` command forwarding a real event.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { VERSAO } from '../../client/src/index.ts';
import { projectRoot } from '#shared/config.ts';
import { clientTypes, clientTypesPath, committedPath } from '../../ops/openapi.ts';
import { startTestApp, type TestApp } from '../helpers/app.ts';
import { clienteDeTeste } from '../helpers/cliente.ts';
import { rodarCli } from '../helpers/escutar.ts';
import { createAccount, type TestAccount } from '../helpers/fixtures.ts';
import { blocos, pastaDeTrechos, rodar, verificarTipos } from '../helpers/guia.ts';
import { CLIENTE_DIR, empacotarCliente, instalarCliente, type Pacote } from '../helpers/pacote.ts';
import { startReceiver } from '../helpers/receiver.ts';

const test = suite('the official client as published');
const run = promisify(execFile);
let app: TestApp;
let conta: TestAccount;
let dir: string;
let pacote: Pacote;
type PackageJson = Record<string, any>;
let pkg: PackageJson;

/** The system's Node 20 (the oldest the package's engines accept), or null where there is none. */
async function node20(): Promise<string | null> {
  for (const candidato of ['/usr/bin/node', '/usr/local/bin/node', '/bin/node']) {
    try {
      const { stdout } = await run(candidato, ['--version']);
      if (stdout.startsWith('v20.')) return candidato;
    } catch {
      // not there
    }
  }
  return null;
}

test.before(async () => {
  app = await startTestApp({ worker: true });
  conta = await createAccount(app.db.pool);
  dir = await pastaDeTrechos('cliente-pacote');
  pacote = await empacotarCliente(dir);
  await instalarCliente(dir, pacote);
  pkg = JSON.parse(await readFile(path.join(CLIENTE_DIR, 'package.json'), 'utf8')) as PackageJson;
});
test.after(async () => {
  await app?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

test('package.json: a publishable package, its version in semver, the changelog and the code', () => {
  assert.is(pkg.name, '@printfarm/api');
  assert.match(pkg.version, /^\d+\.\d+\.\d+$/);
  assert.equal([pkg.version, VERSAO, pacote.versao], ['0.2.0', '0.2.0', '0.2.0']);
  assert.equal(pkg.exports['.'], { types: './dist/index.d.ts', default: './dist/index.js' });
  assert.equal([pkg.types, pkg.type, pkg.license, pkg.engines.node, pkg.bin.printfarm], ['./dist/index.d.ts', 'module', 'MIT', '>=20', 'dist/cli.js']);
  assert.equal(Object.keys(pkg.dependencies), ['openapi-fetch']);
  // The range published is the one the project tests with.
  const projeto = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as PackageJson;
  const [maior, menor] = String(projeto.devDependencies['openapi-fetch']).split('.');
  assert.is(pkg.dependencies['openapi-fetch'], `^${maior}.${menor}.0`);
  assert.ok(pkg.private === undefined, 'not private: it is published');
});

test('the tarball holds the compiled code, its types, README, CHANGELOG and LICENSE; no sources, no tests', async () => {
  const modulos = ['cli', 'client', 'errors', 'escutar', 'escutar-estado', 'etag-cache', 'index', 'openapi', 'transport', 'types', 'versao', 'webhooks'];
  assert.equal(pacote.arquivos, [
    'CHANGELOG.md', 'LICENSE', 'README.md',
    ...modulos.flatMap((m) => [`dist/${m}.d.ts`, `dist/${m}.js`]).sort(),
    'package.json',
  ].sort());
  const changelog = await readFile(path.join(CLIENTE_DIR, 'CHANGELOG.md'), 'utf8');
  assert.match(changelog, `## [${pkg.version}]`);
  assert.match(changelog, 'https://keepachangelog.com/pt-BR/');
});

test('its types are the ones npm run openapi generates from docs/openapi.json', async () => {
  const documento = JSON.parse(await readFile(committedPath, 'utf8')) as Record<string, unknown>;
  assert.ok((await readFile(clientTypesPath, 'utf8')) === await clientTypes(documento), 'client/src/openapi.ts is stale: run npm run openapi');
});

const PROGRAMA = `import { ErroDaApi, Printfarm, type EventoDoTipo } from '@printfarm/api';

const api = new Printfarm({ urlBase: process.env.PRINTFARM_API ?? '', chave: process.env.PRINTFARM_CHAVE ?? '' });
const saude = await api.GET('/saude');
const conta = await api.GET('/conta');
let codigo = '';
try {
  await api.GET('/pedidos-producao/{id}', { params: { path: { id: '00000000-0000-4000-8000-000000000000' } } });
} catch (erro) {
  if (erro instanceof ErroDaApi) codigo = erro.codigo;
}
const exemplo: EventoDoTipo<'produto.criado'>['dados'] = { objeto: 'produto', id: 'x', sku: 'CANECA' };
console.log(JSON.stringify({ situacao: saude.situacao, plano: conta.plano, codigo, sku: exemplo.sku, node: process.version }));
`;

test('a consumer type-checks against the published .d.ts, and runs on Node 24 and on Node 20', async () => {
  await writeFile(path.join(dir, 'programa.ts'), PROGRAMA);
  const tipos = await verificarTipos(dir);
  assert.is(tipos.code, 0, tipos.stdout + tipos.stderr);
  // What tsc checked is what a consumer's build would emit: run the program as JavaScript.
  await writeFile(path.join(dir, 'programa.mjs'), PROGRAMA.replace(", type EventoDoTipo }", ' }').replace(": EventoDoTipo<'produto.criado'>['dados']", ''));
  const env = { PRINTFARM_API: app.baseUrl, PRINTFARM_CHAVE: conta.token };
  const versoes = [process.execPath, await node20()].filter((n): n is string => n !== null);
  if (versoes.length === 1) process.stdout.write('no Node 20 on this machine: the package ran on Node 24 only\n');
  for (const node of versoes) {
    const saida = await rodar(node, ['programa.mjs'], { cwd: dir, env });
    assert.is(saida.code, 0, saida.stderr);
    const { node: versao, ...resto } = JSON.parse(saida.stdout) as Record<string, string>;
    assert.equal(resto, { situacao: 'ok', plano: 'farm', codigo: 'nao_encontrado', sku: 'CANECA' }, versao);
  }
});

test('the README\'s TypeScript examples type-check against the published package', async () => {
  const readme = await readFile(path.join(CLIENTE_DIR, 'README.md'), 'utf8');
  const exemplos = blocos({ arquivo: 'README.md', markdown: readme }).filter((b) => b.lang === 'ts');
  assert.ok(exemplos.length >= 6, `${exemplos.length} examples`);
  const pasta = path.join(dir, 'readme');
  await rm(pasta, { recursive: true, force: true });
  await mkdir(pasta, { recursive: true });
  // An example that uses `api` without making one continues the first one's.
  const inicio = "import { Printfarm } from '@printfarm/api';\nconst api = new Printfarm({ urlBase: '', chave: '' });\n";
  for (const [i, b] of exemplos.entries()) {
    const proprio = /new Printfarm\(/.test(b.codigo) || !/\bapi\./.test(b.codigo);
    await writeFile(path.join(pasta, `exemplo-${i}.ts`), `${proprio ? '' : inicio}${b.codigo}\nexport {};\n`);
  }
  const tipos = await verificarTipos(pasta);
  assert.is(tipos.code, 0, tipos.stdout + tipos.stderr);
});

test('`npx @printfarm/api escutar` (the published command, on the oldest Node it accepts) forwards a real event', async () => {
  const receiver = await startReceiver();
  try {
    const node = (await node20()) ?? process.execPath;
    const bin = path.join(dir, 'node_modules', '.bin', 'printfarm');
    const comando = rodarCli(['escutar', '--encaminhar', receiver.url('/local'), '--estado', path.join(dir, 'estado.json'), '--intervalo', '0.2'],
      { node, cli: bin, env: { PRINTFARM_API: app.baseUrl, PRINTFARM_CHAVE: conta.token } });
    const segredo = /(whsec_\S+)/.exec(await comando.linha(/Segredo/))?.[1] ?? '';
    receiver.setSecrets('/local', segredo);
    await comando.linha(/Eventos criados a partir de/);
    const cotacao = await clienteDeTeste(app.baseUrl, conta.token).POST('/cotacoes', {
      body: { cliente_nome: 'Ana', itens: [{ tipo: 'avulso', nome: 'Caneca', quantidade: 1, preco_unitario_centavos: 100 }] },
    });
    const [recebido] = await receiver.waitFor(1);
    assert.equal([recebido?.json.tipo, recebido?.json.dados.id, recebido?.verified], ['cotacao.criada', cotacao.id, true]);
    await comando.linha(/cotacao\.criada .* → 200 em \d+ ms/);
    assert.is(await comando.parar(), 0);
  } finally {
    await receiver.close();
  }
});

test.run();
