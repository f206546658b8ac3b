// The guide's webhook snippets with real deliveries: a quotation created and sent through the API
// is delivered by the worker to a local receiver, and the headers and body it received are handed to
// the guide's verification snippets in TypeScript, Python and PHP (run as written, each by a small
// driver): the real delivery verifies, a body changed by one character, another secret or a stale
// timestamp do not, and both secrets verify during a rotation. The event log's curl snippets then
// read, list the attempts of and redeliver that event. Python and PHP run where python3 and php
// exist (CI installs them).
import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { rotacionarSegredo } from '#shared/db/webhooks.ts';
import { gerarSegredo } from '#shared/domain/webhooks.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount, type TestAccount } from './helpers/fixtures.ts';
import { pastaDeTrechos, programa, rodar, todosOsBlocos, trecho, TRECHOS, verificarTipos } from './helpers/guia.ts';
import { client } from './helpers/http.ts';
import { addEndpoint, eventually, startReceiver, type Received, type Receiver } from './helpers/receiver.ts';
import { cannotRun } from './helpers/skip.ts';

const test = suite('the guide\'s webhook snippets, with real deliveries');
let app: TestApp;
let receiver: Receiver;
let conta: TestAccount;
let dir: string;
let endpointId: string;
let segredo: string;
let entregue: Received;
let rotacionada: { recebida: Received; antigo: string; novo: string };
const rodados = new Set<string>();
const PYTHON = programa('python3');
const PHP = programa('php');
const CURL = programa('curl');

// How each language's driver runs its snippet: the file the snippet is written to, the driver, the command.
const DRIVER_TS = `import { readFileSync } from 'node:fs';
import { verificarWebhook } from './verificar-ts.ts';

type Caso = { segredo: string; cabecalhos: Record<string, string>; corpo: string; agora: number };
const casos = JSON.parse(readFileSync(0, 'utf8')) as Caso[];
console.log(JSON.stringify(casos.map((c) => verificarWebhook(c.segredo, c.cabecalhos, c.corpo, c.agora * 1000))));
`;
const DRIVER_PY = `import json
import sys

from verificar_py import verificar_webhook

casos = json.load(sys.stdin)
print(json.dumps([verificar_webhook(c["segredo"], c["cabecalhos"], c["corpo"].encode("utf-8"), c["agora"]) for c in casos]))
`;
const DRIVER_PHP = `<?php
require __DIR__ . '/verificar-php.php';
$casos = json_decode(file_get_contents('php://stdin'), true);
echo json_encode(array_map(fn ($c) => verificar_webhook($c['segredo'], $c['cabecalhos'], $c['corpo'], $c['agora']), $casos)), "\\n";
`;

test.before(async () => {
  app = await startTestApp({ worker: true });
  receiver = await startReceiver();
  conta = await createAccount(app.db.pool, { plano: 'farm' });
  const endpoint = await addEndpoint(app.db.pool, receiver, { contaId: conta.contaId, usuarioId: conta.usuarioId, path: '/guia' });
  [endpointId, segredo] = [endpoint.id, endpoint.segredo];
  dir = await pastaDeTrechos('guia-webhooks');
  const arquivos: [string, string][] = [['verificar-ts', 'verificar-ts.ts'], ['verificar-py', 'verificar_py.py'], ['verificar-php', 'verificar-php.php']];
  for (const [nome, arquivo] of arquivos) await writeFile(path.join(dir, arquivo), `${(await trecho(nome)).codigo}\n`);
  await writeFile(path.join(dir, 'driver.ts'), DRIVER_TS);
  await writeFile(path.join(dir, 'driver.py'), DRIVER_PY);
  await writeFile(path.join(dir, 'driver.php'), DRIVER_PHP);
});
test.after(async () => {
  await app?.stop();
  await receiver?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const api = () => client(app.baseUrl, conta.token);
const cabecalhos = (r: Received) => ({ 'webhook-id': r.id, 'webhook-timestamp': r.timestamp, 'webhook-signature': r.signature });
const exemplo = async (tipo: string) => JSON.parse((await todosOsBlocos()).find((b) => b.marcas.evento === tipo)?.codigo ?? '{}') as Record<string, unknown>;
const chaves = (o: object) => Object.keys(o).sort();

test('a quotation created and sent through the API is delivered signed, with the dados the guide shows', async () => {
  const criada = await api().post('/cotacoes', {
    cliente_nome: 'Cliente do guia', itens: [{ tipo: 'avulso', nome: 'Suporte', quantidade: 1, preco_unitario_centavos: 1500 }],
    referencia_externa: 'ERP-1093', metadados: { vendedor: 'Ana', loja: 'São Paulo' },
  }, { 'Idempotency-Key': 'guia-cotacao' });
  assert.is(criada.status, 201);
  [entregue] = await receiver.waitFor(1, (r) => r.json?.tipo === 'cotacao.criada') as [Received];
  assert.ok(entregue.verified, 'the standardwebhooks package verifies it too');
  assert.equal(chaves(entregue.json.dados), chaves(await exemplo('cotacao.criada')));

  // A rotation: the new secret signs at once, the old one too for 24 hours.
  const novo = await rotacionarSegredo(app.db.pool, conta.contaId, endpointId);
  receiver.setSecrets('/guia', novo?.segredo ?? '', segredo);
  const enviada = await api().post(`/cotacoes/${criada.body.id}/status`, { status: 'enviada' }, { 'Idempotency-Key': 'guia-enviar' });
  assert.is(enviada.status, 200);
  const recebidas = await receiver.waitFor(2, (r) => ['cotacao.status_mudou', 'cotacao.enviada'].includes(r.json?.tipo));
  for (const r of recebidas) assert.equal(chaves(r.json.dados), chaves(await exemplo(r.json.tipo)), r.json.tipo);
  const mudou = recebidas.find((r) => r.json.tipo === 'cotacao.status_mudou') as Received;
  assert.is(mudou.signature.split(' ').length, 2, 'two signatures during the rotation');
  rotacionada = { recebida: mudou, antigo: segredo, novo: novo?.segredo ?? '' };
});

/** The cases every language's snippet must decide alike, and what it must answer. */
function casos() {
  const agora = Number(entregue.timestamp);
  const adulterado = entregue.body.replace('Ana', 'Anb');
  assert.ok(adulterado !== entregue.body);
  const caso = (r: Received, chave: string, instante: number, corpo = r.body) => ({ segredo: chave, cabecalhos: cabecalhos(r), corpo, agora: instante });
  return {
    entrada: [
      caso(entregue, segredo, agora), // the real delivery
      caso(entregue, segredo, agora, adulterado), // one character of the body changed
      caso(entregue, gerarSegredo(), agora), // another endpoint's secret
      caso(entregue, segredo, agora + 10 * 60), // verified 10 minutes later
      caso(entregue, segredo, agora + 4 * 60), // 4 minutes later: within the tolerance
      caso(rotacionada.recebida, rotacionada.novo, Number(rotacionada.recebida.timestamp)), // rotation: the new secret
      caso(rotacionada.recebida, rotacionada.antigo, Number(rotacionada.recebida.timestamp)), // rotation: the previous one
    ],
    esperado: [true, false, false, false, true, true, true],
  };
}

async function verificar(nome: string, comando: string, driver: string): Promise<void> {
  rodados.add(nome);
  const { entrada, esperado } = casos();
  const out = await rodar(comando, [driver], { cwd: dir, input: JSON.stringify(entrada) });
  assert.is(out.code, 0, out.stderr);
  assert.equal(JSON.parse(out.stdout), esperado, nome);
}

test('verificar-ts (TypeScript) type-checks and verifies the real delivery, and refuses a changed one', async () => {
  const tipos = await verificarTipos(dir);
  assert.is(tipos.code, 0, tipos.stdout + tipos.stderr);
  await verificar('verificar-ts', process.execPath, 'driver.ts');
});

if (PYTHON) {
  test('verificar-py (Python, standard library only) verifies the real delivery, and refuses a changed one', async () => {
    await verificar('verificar-py', PYTHON, 'driver.py');
  });
} else {
  cannotRun(test, 'verificar-py (Python) verifies a real delivery', 'no python3 on PATH', 'install it with apt-get install python3');
}

if (PHP) {
  test('verificar-php (PHP, no Composer package) verifies the real delivery, and refuses a changed one', async () => {
    await verificar('verificar-php', PHP, 'driver.php');
  });
} else {
  cannotRun(test, 'verificar-php (PHP) verifies a real delivery', 'no php on PATH', 'install it with apt-get install php-cli');
}

async function sh(nome: string, extra: Record<string, string> = {}): Promise<Record<string, any>> {
  rodados.add(nome);
  const out = await rodar('bash', ['-c', (await trecho(nome)).codigo], {
    cwd: dir, env: { PRINTFARM_API: app.baseUrl, PRINTFARM_CHAVE: conta.token, ...extra },
  });
  assert.is(out.code, 0, `${nome}: ${out.stderr}`);
  return JSON.parse(out.stdout) as Record<string, any>;
}

if (CURL) {
  test('eventos-recentes, tentativas, reenviar and recuperar: the event log has the delivered event, its attempt, redelivers it, and a simulated recovery finds nothing failed', async () => {
    const recentes = await sh('eventos-recentes');
    assert.equal(recentes.dados, [entregue.json], 'the same envelope the receiver got');
    const evento = { EVENTO_ID: entregue.id };
    const tentativas = await eventually(() => sh('tentativas', evento), (t) => t.dados[0]?.status_http === 200);
    assert.equal(tentativas.dados.map((t: { endpoint_id: string; tentativa: number }) => [t.endpoint_id, t.tentativa]), [[endpointId, 1]]);
    const reenvio = await sh('reenviar', evento);
    assert.equal(reenvio.entregas.map((e: { endpoint_id: string; situacao: string }) => [e.endpoint_id, e.situacao]), [[endpointId, 'pendente']]);
    const [, denovo] = await receiver.waitFor(2, (r) => r.id === entregue.id);
    assert.is(denovo?.body, entregue.body, 'the same event, under the same webhook-id');
    // Nothing failed: a recovery of the day, simulated, has nothing to send.
    const dia = { DESDE: new Date(Date.now() - 86_400_000).toISOString(), ATE: new Date(Date.now() + 60_000).toISOString() };
    const recuperacao = await sh('recuperar', dia);
    assert.equal([recuperacao.simulacao, recuperacao.entregas, recuperacao.proximo_desde], [true, 0, null]);
  });
} else {
  cannotRun(test, 'the event log\'s curl snippets', 'no curl on PATH', 'install it with apt-get install curl');
}

test('every snippet assigned to this suite ran (or its interpreter is missing)', () => {
  const faltando = new Set([...(PYTHON ? [] : ['verificar-py']), ...(PHP ? [] : ['verificar-php']),
    ...(CURL ? [] : ['eventos-recentes', 'tentativas', 'reenviar', 'recuperar'])]);
  const meus = Object.entries(TRECHOS).filter(([, s]) => s === 'guia-webhooks').map(([n]) => n);
  assert.equal(meus.filter((n) => !rodados.has(n) && !faltando.has(n)), []);
});

test.run();
