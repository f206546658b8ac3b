// One language for the reader (issue 18, item 12): every text a client reads is Brazilian
// Portuguese. The OpenAPI document (summaries, descriptions, tags, headers, parameters, fields,
// events), the event type catalog, the reference and error pages, the integrator's guide and the
// e-mails are checked here
// for English prose (test/helpers/language.ts); every problem body any suite receives is checked by
// the conformance check (test/helpers/conformance.ts).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { REDOC_TEXTS } from '../api/reference/docs.ts';
import { paginasDoGuia } from '../api/reference/guia.ts';
import { sql } from '#shared/db/pool.ts';
import { criarEndpoint, desativarEndpoints } from '#shared/db/webhooks.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { createAccount } from './helpers/fixtures.ts';
import { client, request } from './helpers/http.ts';
import { englishWords, inEnglish, readerTexts } from './helpers/language.ts';
import { rodar } from './helpers/guia.ts';
import { ErroDeConexao, gerarSegredo, verificarWebhook, type ErroDeAssinatura } from '../client/src/index.ts';
import { projectRoot } from '#shared/config.ts';

const test = suite('one language for the reader');
let app: TestApp;

test.before(async () => {
  app = await startTestApp();
});
test.after(async () => app.stop());

test('the check finds English prose and passes Portuguese prose, identifiers and code', () => {
  for (const english of ['Check that the API is up', 'List sales channels', 'View one product', 'A page of channels, oldest first.',
    'Only records changed at or after this instant.', 'Costs 2 units; a repetition replays the first answer.']) {
    assert.ok(englishWords(english).length > 0, english);
  }
  for (const portuguese of ['Lista os pedidos de produção, do mais antigo ao mais novo.', 'Verifica se a API está no ar',
    'Se omitido: o preço da faixa do canal para a quantidade (exige canal_id).', 'Um POST do envelope com `webhook-id` e <chave>.',
    'Sequencial por conta: OP-000001, OP-000002…', 'true quando esta resposta repete uma requisição com a mesma Idempotency-Key.',
    'Chave de API no cabeçalho Authorization: Bearer <chave>.', 'Se for aprovada, o pedido pode ser criado.']) {
    assert.equal(englishWords(portuguese), [], portuguese);
  }
});

test('every summary, description and title of the served OpenAPI document is Portuguese', async () => {
  const res = await request(`${app.baseUrl}/openapi.json`);
  assert.is(res.status, 200);
  const texts = readerTexts(res.body);
  assert.ok(texts.length > 150, `${texts.length} texts found`);
  assert.equal(inEnglish(texts), []);
});

test('the event type catalog describes each type in Portuguese', async () => {
  const account = await createAccount(app.db.pool, { plano: 'farm' });
  const res = await client(app.baseUrl, account.token).get('/tipos-de-evento');
  assert.is(res.status, 200);
  assert.equal(inEnglish(res.body.dados.map((t: { tipo: string; descricao: string }) => ({ at: t.tipo, text: t.descricao }))), []);
});

test('validation messages are Brazilian Portuguese (zod\'s pt-BR, not Portugal\'s pt)', async () => {
  const account = await createAccount(app.db.pool, { plano: 'farm', escopos: ['catalogo:ler'] });
  const res = await client(app.baseUrl, account.token).get('/canais?limite=101');
  assert.is(res.status, 400);
  assert.match(res.body.erros[0].mensagem, /^Grande demais/);
});

const pageText = (html: string) => html.replace(/<(script|style)[\s\S]*?<\/\1>/g, ' ').replace(/<[^>]+>/g, ' ').replace(/&[a-z]+;/g, ' ');

test('the reference page, its Redoc labels and the error page are Portuguese', async () => {
  const origin = new URL(app.baseUrl).origin;
  for (const path of ['/docs', '/docs/erros']) {
    const res = await request(`${origin}${path}`);
    assert.is(res.status, 200, path);
    assert.match(res.text, '<html lang="pt-BR">', path);
    assert.equal(englishWords(pageText(res.text)), [], path);
  }
  const init = await request(`${origin}/docs/init.js`);
  const labels = JSON.parse(/labels: (\{.*\}),/.exec(init.text)?.[1] ?? '{}') as Record<string, string>;
  for (const key of ['responses', 'requestSamples', 'responseSamples', 'downloadSpecification', 'example', 'default']) {
    assert.type(labels[key], 'string', key);
  }
  assert.equal(inEnglish(Object.entries(labels).map(([at, text]) => ({ at, text }))), []);
  const bundle = (await request(`${origin}/docs/redoc.standalone.js`)).text;
  for (const [from, to] of REDOC_TEXTS) {
    assert.ok(bundle.includes(to) && !bundle.includes(from), `Redoc renders ${to}, not ${from}`);
  }
});

// Code is not prose: the guide's snippets and code spans are left out, as the check leaves out `…`.
const proseOf = (html: string) => pageText(html.replace(/<(pre|code)[\s\S]*?<\/\1>/g, ' '));

test('every page of the integrator\'s guide, as served, reads as Portuguese', async () => {
  const origin = new URL(app.baseUrl).origin;
  const pages = paginasDoGuia();
  assert.ok(pages.length >= 10, `${pages.length} pages`);
  for (const { caminho } of pages) {
    const res = await request(`${origin}${caminho}`);
    assert.is(res.status, 200, caminho);
    assert.match(res.text, '<html lang="pt-BR">', caminho);
    const prose = proseOf(res.text);
    assert.ok(prose.split(/\s+/).length > 150, `${caminho} has prose to check`);
    assert.equal(englishWords(prose), [], caminho);
  }
  // The check would see English in the guide: its prose with code left in has words like "from" and "for".
  assert.ok(pages.some((p) => englishWords(pageText(p.html)).length > 0), 'the snippets themselves are code, in English');
});

const Email = z.object({ kind: z.string(), subject: z.string(), body: z.string() });

test('the e-mails to a key\'s creator and an endpoint\'s creator are Portuguese', async () => {
  const account = await createAccount(app.db.pool, { plano: 'farm' });
  // The month used up: twenty refusals in a row suspend the key and e-mail its creator.
  await app.db.pool.query(sql.unsafe`
    INSERT INTO monthly_usage (conta_id, month, calls) VALUES (${account.contaId}, date_trunc('month', now() AT TIME ZONE 'UTC')::date, 750000)`);
  for (let i = 0; i < 20; i++) assert.is((await client(app.baseUrl, account.token).get('/saude')).status, 429);
  // An endpoint disabled by its receiver (410), another by five days of failures.
  await app.db.pool.transaction(async (tx) => {
    const endpoint = (url: string) => criarEndpoint(tx, { contaId: account.contaId, usuarioId: account.usuarioId, url, tipos: [], descricao: null });
    const gone = await endpoint('https://erp.example.com/a');
    const failing = await endpoint('https://erp.example.com/b');
    await tx.query(sql.unsafe`UPDATE webhook_endpoints SET falhando_desde = now() - interval '6 days' WHERE id = ${failing.id}`);
    await desativarEndpoints(tx, [
      { contaId: account.contaId, endpointId: gone.id, motivo: 'recebedor_410' },
      { contaId: account.contaId, endpointId: failing.id, motivo: 'falhas_5_dias' },
    ]);
  });
  const emails = await app.db.pool.any(sql.type(Email)`
    SELECT kind, subject, body FROM outgoing_emails WHERE conta_id = ${account.contaId} ORDER BY created_at, kind`);
  assert.equal(emails.map((e) => e.kind).sort(), ['chave_suspensa', 'webhook_endpoint_desativado', 'webhook_endpoint_desativado']);
  assert.equal(inEnglish(emails.flatMap((e) => [{ at: `${e.kind} subject`, text: e.subject }, { at: `${e.kind} body`, text: e.body }])), []);
});

// The official client (client/) is read by integrators too: its README and CHANGELOG, the
// documentation comments their editors show (/** … */; notes for the maintainers are // comments),
// the command's help and lines, and the messages of the errors it throws.
test('the official client\'s README, changelog, documentation comments, command and errors are Portuguese', async () => {
  const markdown = (arquivo: string) => readFileSync(path.join(projectRoot, 'client', arquivo), 'utf8').replace(/^```[\s\S]*?^```$/gm, ' ');
  const textos = ['README.md', 'CHANGELOG.md'].map((arquivo) => ({ at: `client/${arquivo}`, text: markdown(arquivo).replace(/\[[^\]]*\]\([^)]*\)/g, ' ') }));
  for (const arquivo of readdirSync(path.join(projectRoot, 'client', 'src')).filter((f) => f !== 'openapi.ts')) {
    const fonte = readFileSync(path.join(projectRoot, 'client', 'src', arquivo), 'utf8');
    for (const comentario of fonte.match(/\/\*\*[\s\S]*?\*\//g) ?? []) textos.push({ at: `client/src/${arquivo}`, text: comentario.replace(/^\s*\/?\*+\/?/gm, ' ') });
  }
  const ajuda = await rodar(process.execPath, [path.join(projectRoot, 'client', 'src', 'cli.ts'), '--ajuda'], { cwd: projectRoot });
  const sem = await rodar(process.execPath, [path.join(projectRoot, 'client', 'src', 'cli.ts'), 'escutar'], { cwd: projectRoot, env: { PRINTFARM_API: '', PRINTFARM_CHAVE: '' } });
  assert.is(sem.code, 64);
  textos.push({ at: 'printfarm --ajuda', text: ajuda.stdout }, { at: 'printfarm escutar (sem opções)', text: sem.stderr });
  const semResposta = new ErroDeConexao(new Error('connect ECONNREFUSED'), null, 4);
  textos.push({ at: 'ErroDeConexao', text: semResposta.message.split(':')[0] ?? '' });
  for (const motivo of ['cabecalho_ausente', 'fora_do_prazo', 'assinatura_invalida'] as const) {
    try {
      verificarWebhook({ corpo: '{}', cabecalhos: motivo === 'cabecalho_ausente' ? {} : { 'webhook-id': 'x', 'webhook-timestamp': motivo === 'fora_do_prazo' ? '1' : String(Math.floor(Date.now() / 1000)), 'webhook-signature': 'v1,x' } }, { segredo: gerarSegredo() });
    } catch (error) {
      assert.is((error as ErroDeAssinatura).motivo, motivo);
      textos.push({ at: `ErroDeAssinatura ${motivo}`, text: (error as Error).message });
    }
  }
  assert.ok(textos.length > 40, `${textos.length} texts`);
  assert.equal(inEnglish(textos), []);
});

test.run();
