// The integrator's guide (docs/guia/): every page served at /docs/guia, linked from the reference
// and the error page; every link between its pages (and their anchors) leads somewhere; every
// snippet is named and run by a suite (test/helpers/guia.ts, TRECHOS); every example of data is
// what the service sends (a response of its route, an event of its type).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { anchorOf, GUIA_DIR, linkOnService, paginasDoGuia } from '../api/reference/guia.ts';
import { Evento } from '../api/routes/eventos.ts';
import { GUIA_PATH } from '../api/reference/openapi.ts';
import { projectRoot } from '#shared/config.ts';
import { TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { checkConformance } from './helpers/conformance.ts';
import { blocos, LINGUAGENS_EXECUTADAS, paginas, TRECHOS, type Bloco, type Pagina } from './helpers/guia.ts';
import { request } from './helpers/http.ts';

const test = suite('the integrator\'s guide');
let app: TestApp;
let guia: Pagina[];
let todos: Bloco[];

test.before(async () => {
  app = await startTestApp();
  guia = await paginas();
  todos = guia.flatMap(blocos);
});
test.after(async () => app.stop());

const origin = () => new URL(app.baseUrl).origin;

test('every page is served as HTML at /docs/guia, and the index links every page', async () => {
  const servidas = paginasDoGuia();
  assert.equal(servidas.map((p) => p.arquivo), guia.map((p) => p.arquivo));
  for (const pagina of servidas) {
    const res = await request(`${origin()}${pagina.caminho}`);
    assert.is(res.status, 200, pagina.caminho);
    assert.is(res.headers.get('content-type'), 'text/html; charset=utf-8');
    assert.match(res.headers.get('content-security-policy') ?? '', "default-src 'self'");
    assert.is(res.text, pagina.html);
  }
  const indice = guia.find((p) => p.arquivo === 'README.md')?.markdown ?? '';
  for (const p of guia.filter((x) => x.arquivo !== 'README.md')) assert.match(indice, `](${p.arquivo})`, `the index links ${p.arquivo}`);
  assert.is((await request(`${origin()}${GUIA_PATH}/nao-existe`)).status, 404);
});

test('the reference and the error page link the guide', async () => {
  const openapi = await request(`${app.baseUrl}/openapi.json`);
  assert.match(openapi.body.info.description, `](${GUIA_PATH})`);
  assert.match((await request(`${origin()}/docs/erros`)).text, `href="${GUIA_PATH}/erros"`);
});

test('the reference\'s links into the guide lead to its pages and headings', async () => {
  const openapi = (await request(`${app.baseUrl}/openapi.json`)).text;
  const links = [...openapi.matchAll(/\]\((\/docs\/guia[^)]*)\)/g)].map((m) => m[1] ?? '');
  assert.ok(links.length >= 4, `${links.length} links`);
  const paginas = new Map(paginasDoGuia().map((p) => [p.caminho, p.html]));
  for (const link of links) {
    const [caminho = '', ancora] = link.split('#');
    assert.ok(paginas.has(caminho), `${link}: a page of the guide`);
    if (ancora) assert.match(paginas.get(caminho) ?? '', ` id="${ancora}"`, `${link}: a heading of it`);
  }
});

test('every link of the guide leads to a page, a heading of it, the changelog or the reference', () => {
  const ancoras = new Map(guia.map((p) => [p.arquivo, new Set([...p.markdown.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchorOf((m[1] ?? '').replace(/`/g, ''))))]));
  const links = guia.flatMap((p) => [...p.markdown.replace(/^```[\s\S]*?^```$/gm, '').matchAll(/\]\(([^)]+)\)/g)].map((m) => ({ de: p.arquivo, href: m[1] ?? '' })));
  assert.ok(links.length > 40, `${links.length} links`);
  for (const { de, href } of links) {
    const [alvo = '', ancora] = href.split('#');
    const arquivo = alvo === '' ? de : alvo;
    assert.ok(existsSync(path.join(GUIA_DIR, arquivo)), `${de}: ${href} names a file of the repository`);
    if (arquivo.endsWith('.md') && !arquivo.startsWith('..')) {
      if (ancora !== undefined) assert.ok(ancoras.get(arquivo)?.has(ancora), `${de}: ${href} names a heading of ${arquivo}`);
    } else {
      assert.ok(['../../CHANGELOG.md', '../openapi.json'].includes(arquivo), `${de}: ${href} leads to the changelog or the reference`);
      assert.is(ancora, undefined, `${de}: ${href}`);
    }
    assert.ok(linkOnService(href).startsWith('/docs') || href.startsWith('#'), `${de}: ${href} has an address on the service`);
  }
});

test('every code block is a snippet a suite runs, or an example checked here', () => {
  const executados = todos.filter((b) => (LINGUAGENS_EXECUTADAS as readonly string[]).includes(b.lang));
  for (const b of todos) {
    assert.ok([...LINGUAGENS_EXECUTADAS, 'json', 'http'].includes(b.lang), `${b.arquivo}:${b.linha}: a block in ${b.lang || 'no language'}`);
  }
  const nomes = executados.map((b) => b.marcas.trecho ?? `${b.arquivo}:${b.linha} (no trecho=)`);
  assert.equal([...nomes].sort(), Object.keys(TRECHOS).sort(), 'each snippet named once and run by a suite');
  for (const b of todos.filter((x) => x.lang === 'http')) {
    assert.ok(b.marcas.saida && TRECHOS[b.marcas.saida], `${b.arquivo}:${b.linha}: the output of a snippet (saida=)`);
  }
  for (const b of todos.filter((x) => x.lang === 'json')) {
    assert.ok(b.marcas.resposta || b.marcas.evento || 'envelope' in b.marcas,
      `${b.arquivo}:${b.linha}: a json example says what it is (resposta=, evento= or envelope)`);
  }
});

test('the examples of responses are what their routes answer (the OpenAPI document)', () => {
  const exemplos = todos.filter((b) => b.marcas.resposta);
  assert.ok(exemplos.length >= 4);
  for (const b of exemplos) {
    const [method = '', caminho = '', status = ''] = (b.marcas.resposta ?? '').split(':');
    const problem = Number(status) >= 400;
    const headers = new Headers({
      'content-type': problem ? 'application/problem+json' : 'application/json',
      'x-request-id': '019ac3f2-5b7e-7c41-9a2e-6f1d0c8b4e21', 'ratelimit-policy': '"rajada";q=20;w=4', ratelimit: '"rajada";r=19;t=1', etag: '"1-a"',
    });
    checkConformance(method, `http://localhost/v1${caminho}`, Number(status), headers, b.codigo);
  }
});

test('every event type has an example of its dados, with the fields its catalog names, and the envelope is one', () => {
  const exemplos = todos.filter((b) => b.marcas.evento);
  assert.equal(exemplos.map((b) => b.marcas.evento), TIPOS_DE_EVENTO.map((t) => t.tipo));
  for (const b of exemplos) {
    const tipo = TIPOS_DE_EVENTO.find((t) => t.tipo === b.marcas.evento);
    const dados = JSON.parse(b.codigo) as Record<string, unknown>;
    tipo?.dados.parse(dados);
    for (const campo of ['objeto', ...(tipo?.campos ?? [])]) assert.ok(campo in dados, `${b.marcas.evento}: ${campo}`);
  }
  const envelopes = todos.filter((b) => b.lang === 'json' && 'envelope' in b.marcas);
  assert.is(envelopes.length, 1);
  const envelope = Evento.parse(JSON.parse(envelopes[0]?.codigo ?? ''));
  TIPOS_DE_EVENTO.find((t) => t.tipo === envelope.tipo)?.dados.parse(envelope.dados);
  assert.ok(envelope.url?.endsWith(TIPOS_DE_EVENTO.find((t) => t.tipo === envelope.tipo)?.caminho(envelope.dados) ?? '-'));
});

test('the guide and the changelog announce a ceiling change the same way', () => {
  const changelog = readFileSync(path.join(projectRoot, 'CHANGELOG.md'), 'utf8');
  const exemplo = /^> (- \*\*Tetos:\*\*.+)$/m.exec(guia.find((p) => p.arquivo === 'mudancas.md')?.markdown ?? '')?.[1];
  assert.ok(exemplo && changelog.includes(exemplo), 'the example is the changelog\'s');
});

test('the versions of the typed client the guide names are the ones the project tests with', () => {
  const pkg = JSON.parse(readFileSync(path.join(projectRoot, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  const texto = guia.find((p) => p.arquivo === 'primeira-chamada.md')?.markdown.replace(/\s+/g, ' ') ?? '';
  for (const pacote of ['openapi-fetch', 'openapi-typescript']) {
    const [maior, menor] = (pkg.devDependencies[pacote] ?? '').split('.');
    const nomeada = new RegExp(`\`${pacote}\` (\\d+)\\.(\\d+)`).exec(texto);
    assert.equal([nomeada?.[1], nomeada?.[2]], [maior, menor], pacote);
  }
});

test.run();
