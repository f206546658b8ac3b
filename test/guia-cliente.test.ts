// The guide's snippets of the official client (docs/guia/cliente-typescript.md), run as written
// beside the package as npm publishes it (test/helpers/pacote.ts), against a real service with its
// worker: receber-webhook handles a real delivery (and refuses it changed by one character), and
// `npx @printfarm/api escutar` forwards a real event to a local receiver, printing what the guide
// shows. The one change made to a snippet: escutar forwards to this suite's receiver instead of
// localhost:3001, which another program may hold.
import { spawn } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { semLimites } from './helpers/catalogo.ts';
import { clienteDeTeste } from './helpers/cliente.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { pastaDeTrechos, rodar, todosOsBlocos, trecho, TRECHOS, verificarTipos } from './helpers/guia.ts';
import { empacotarCliente, instalarCliente } from './helpers/pacote.ts';
import { addEndpoint, startReceiver, type Receiver } from './helpers/receiver.ts';
import { projectRoot } from '#shared/config.ts';

const test = suite('the guide\'s snippets of the official client');
let app: TestApp;
let receiver: Receiver;
let conta: TestAccount;
let dir: string;
const rodados = new Set<string>();

const DRIVER = `import { readFileSync } from 'node:fs';
import { receber } from './receber-webhook.ts';

const { corpo, cabecalhos } = JSON.parse(readFileSync(0, 'utf8')) as { corpo: string; cabecalhos: Record<string, string> };
console.log(receber(corpo, cabecalhos));
`;

test.before(async () => {
  app = await startTestApp({ worker: true });
  await semLimites(app.db.pool);
  conta = await createAccount(app.db.pool);
  receiver = await startReceiver();
  dir = await pastaDeTrechos('guia-cliente');
  await instalarCliente(dir, await empacotarCliente(dir));
});
test.after(async () => {
  await app?.stop();
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const env = () => ({ PRINTFARM_API: app.baseUrl, PRINTFARM_CHAVE: conta.token });
const cliente = () => clienteDeTeste(app.baseUrl, conta.token);

test('receber-webhook type-checks with the published package, handles a real delivery and refuses a changed one', async () => {
  const b = await trecho('receber-webhook');
  rodados.add('receber-webhook');
  await writeFile(path.join(dir, 'receber-webhook.ts'), `${b.codigo}\n`);
  await writeFile(path.join(dir, 'receber-webhook.driver.ts'), DRIVER);
  const tipos = await verificarTipos(dir);
  assert.is(tipos.code, 0, tipos.stdout + tipos.stderr);

  const endpoint = await addEndpoint(app.db.pool, receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: '/guia', tipos: ['cotacao.enviada'] });
  const cotacao = await cliente().POST('/cotacoes', { body: { cliente_nome: 'Ana', itens: [{ tipo: 'avulso', nome: 'Caneca', quantidade: 1, preco_unitario_centavos: 2500 }] } });
  await cliente().POST('/cotacoes/{id}/status', { params: { path: { id: cotacao.id } }, body: { status: 'enviada' } });
  const [entrega] = await receiver.waitFor(1, (r) => r.path === '/guia');
  const tratar = (corpo: string) => rodar(process.execPath, ['receber-webhook.driver.ts'], {
    cwd: dir, env: { SEGREDO_WEBHOOK: endpoint.segredo }, input: JSON.stringify({ corpo, cabecalhos: entrega?.headers }),
  });
  const aceita = await tratar(entrega?.body ?? '');
  assert.is(aceita.code, 0, aceita.stderr);
  assert.equal(aceita.stdout.trim().split('\n'), [`cotação ${cotacao.codigo} enviada, versão 1`, '200']);
  const alterada = await tratar((entrega?.body ?? '').replace('"versao":1', '"versao":2'));
  assert.equal(alterada.stdout.trim(), '401');
});

test('escutar (npx, as the guide writes it) prints its secret and forwards a real event, signed, as the guide shows', async () => {
  const b = await trecho('escutar');
  rodados.add('escutar');
  const codigo = b.codigo.replace('http://localhost:3001/webhooks', receiver.url('/webhooks'));
  assert.not.equal(codigo, b.codigo, 'the snippet forwards to localhost:3001');
  // Its own process group, so that stopping it stops npx and the command npx started.
  const processo = spawn('bash', ['-c', codigo], {
    cwd: dir, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env(), PATH: `${path.dirname(process.execPath)}:${path.join(projectRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`, npm_config_offline: 'true' },
  });
  let saida = '';
  processo.stdout.on('data', (c: Buffer) => (saida += c.toString()));
  processo.stderr.on('data', (c: Buffer) => (saida += c.toString()));
  const linhas = () => saida.split('\n').filter(Boolean);
  const esperar = async (quantas: number) => {
    for (let i = 0; i < 400 && linhas().length < quantas; i++) await new Promise((r) => setTimeout(r, 50));
    assert.ok(linhas().length >= quantas, saida);
  };
  try {
    await esperar(3);
    const segredo = /(whsec_\S+)/.exec(linhas()[1] ?? '')?.[1] ?? '';
    receiver.setSecrets('/webhooks', segredo);
    const cotacao = await cliente().POST('/cotacoes', { body: { cliente_nome: 'Bia', itens: [{ tipo: 'avulso', nome: 'Vaso', quantidade: 1, preco_unitario_centavos: 900 }] } });
    // The first poll is at once, the next one 5 s later (the default interval).
    const [encaminhada] = await receiver.waitFor(1, (r) => r.path === '/webhooks', 20_000);
    assert.equal([encaminhada?.json.tipo, encaminhada?.json.dados.id, encaminhada?.verified], ['cotacao.criada', cotacao.id, true]);
    await esperar(4);
    // Line by line what the guide shows, but for the address, the secret, the instants, the id and the time.
    const mostrada = (await todosOsBlocos()).find((x) => x.marcas.saida === 'escutar')?.codigo.split('\n') ?? [];
    const forma = (linha: string) => linha.replace(/http:\/\/\S+\/webhooks/, '<url>').replace(/whsec_\S+/, '<segredo>')
      .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/, '<instante>').replace(/^\d\d:\d\d:\d\d/, '<hora>').replace(/[0-9a-f-]{36}/, '<id>').replace(/\d+ ms/, '<n> ms');
    assert.equal(linhas().slice(0, 4).map(forma), mostrada.map(forma));
  } finally {
    try {
      process.kill(-(processo.pid ?? 0), 'SIGTERM');
    } catch {
      // already gone
    }
  }
});

test('every snippet assigned to this suite ran', async () => {
  assert.ok((await todosOsBlocos()).length > 0);
  assert.equal(Object.entries(TRECHOS).filter(([, s]) => s === 'guia-cliente').map(([n]) => n).filter((n) => !rodados.has(n)), []);
});

test.run();
