// The API reference page in a real headless Chromium: it loads, shows every operation, logs no
// console error and requests nothing outside the service. The integrator's guide too: every page
// renders, and every link on it leads to a page of the service (another page of the guide and its
// heading, the reference, the error page, the changelog).
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { paginasDoGuia } from '../api/reference/guia.ts';
import { CHANGELOG_PATH } from '../api/reference/openapi.ts';
import { routes } from '../api/routes/index.ts';
import { projectRoot } from '#shared/config.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { cannotRun } from './helpers/skip.ts';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const test = suite('API reference page in Chromium');

if (!existsSync(CHROMIUM)) {
  cannotRun(test, 'the page renders every operation without errors or outside requests',
    `no Chromium at ${CHROMIUM}`, "install it with apt-get install chromium (Debian's package), or set CHROMIUM_PATH to one");
} else {
  let app: TestApp;
  let browser: Browser;
  test.before(async () => {
    app = await startTestApp();
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-quic',
        '--no-first-run', '--disable-component-update', '--disable-sync'],
    });
  });
  test.after(async () => {
    await browser?.close();
    await app?.stop();
  });

  test('the page renders every operation without console errors or requests outside the service', async () => {
    const origin = new URL(app.baseUrl).origin;
    const page = await browser.newPage();
    const outside: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => {
      if (!r.url().startsWith(origin) && !r.url().startsWith('data:') && !r.url().startsWith('blob:')) outside.push(r.url());
    });
    page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
    page.on('response', (r) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
    page.on('pageerror', (e) => errors.push(String(e)));
    const response = await page.goto(`${origin}/docs`, { waitUntil: 'networkidle' });
    assert.is(response?.status(), 200);
    await page.waitForSelector('[data-section-id^="operation/"]', { timeout: 30_000 });
    const operations = await page.locator('[data-section-id^="operation/"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-section-id')));
    for (const route of routes) assert.ok(operations.includes(`operation/${route.operationId}`), `operation ${route.operationId} shown`);
    const text = await page.locator('body').innerText();
    for (const route of routes) assert.ok(text.includes(route.summary), `summary "${route.summary}" shown`);
    assert.ok(await page.locator('a[href="/docs/mudancas"]').count() > 0, 'the changelog is linked from the reference');
    assert.ok(await page.locator('a[href="/docs/guia"]').count() > 0, 'the guide is linked from the reference');
    // Redoc's own labels are in the reader's language too (api/reference/docs.ts).
    for (const label of ['Exemplos de resposta', 'Respostas']) assert.ok(text.includes(label), `label "${label}" shown`);
    for (const label of ['Response samples', 'Request samples', 'Responses', 'Authorizations', 'Response Schema', 'License']) {
      assert.not.ok(text.includes(label), `no "${label}"`);
    }
    const artifacts = path.join(projectRoot, 'artifacts');
    await mkdir(artifacts, { recursive: true });
    await page.screenshot({ path: path.join(artifacts, 'docs.png'), fullPage: false });
    assert.equal(outside, [], 'no request outside the service');
    assert.equal(errors, [], 'no console error');
    await page.close();
  });

  test('the guide\'s pages render, and every link on them leads to a page of the service and its heading', async () => {
    const origin = new URL(app.baseUrl).origin;
    const page = await browser.newPage();
    const outside: string[] = [];
    const errors: string[] = [];
    page.on('request', (r) => !r.url().startsWith(origin) && !/^(data|blob|about):/.test(r.url()) && outside.push(r.url()));
    page.on('console', (m) => m.type() === 'error' && errors.push(`${page.url()}: ${m.text()}`));
    page.on('response', (r) => r.status() >= 400 && errors.push(`${r.status()} ${r.url()}`));
    page.on('pageerror', (e) => errors.push(String(e)));
    const destinos = new Set<string>();
    for (const pagina of paginasDoGuia()) {
      const response = await page.goto(`${origin}${pagina.caminho}`, { waitUntil: 'load' });
      assert.is(response?.status(), 200, pagina.caminho);
      assert.is(await page.locator('main h1').innerText(), pagina.titulo);
      const hrefs = await page.locator('a[href]').evaluateAll((els) => els.map((a) => a.getAttribute('href') ?? ''));
      for (const href of hrefs) destinos.add(new URL(href, page.url()).href);
    }
    for (const caminho of ['/docs', '/docs/erros', '/docs/mudancas', '/docs/guia/primeira-chamada', '/docs/guia/eventos']) {
      assert.ok([...destinos].some((d) => d.split('#')[0] === `${origin}${caminho}`), `the guide links ${caminho}`);
    }
    for (const href of destinos) {
      const url = new URL(href);
      assert.is(url.origin, origin, `${href} stays on the service`);
      if (url.pathname === CHANGELOG_PATH) {
        // Plain text: a browser showing it asks for /favicon.ico, which the service does not serve.
        assert.is((await page.request.get(href)).status(), 200, href);
        continue;
      }
      await page.goto('about:blank');
      const response = await page.goto(href, { waitUntil: url.pathname === '/docs' ? 'networkidle' : 'load' });
      assert.is(response?.status(), 200, href);
      if (url.hash) {
        const id = decodeURIComponent(url.hash.slice(1));
        assert.is(await page.locator(`[id="${id}"]`).count(), 1, `${href}: a heading #${id}`);
      }
    }
    // A reader's click from the index to a page.
    await page.goto(`${origin}/docs/guia`);
    await page.getByRole('link', { name: 'Verificar a assinatura' }).click();
    await page.waitForURL(`${origin}/docs/guia/assinatura`);
    await page.screenshot({ path: path.join(projectRoot, 'artifacts', 'guia.png'), fullPage: false });
    assert.equal(outside, [], 'no request outside the service');
    assert.equal(errors, [], 'no console error');
    await page.close();
  });

  test('the error page lists every codigo a problem type points to', async () => {
    const page = await browser.newPage();
    await page.goto(`${new URL(app.baseUrl).origin}/docs/erros#limite_excedido`);
    for (const codigo of ['dados_invalidos', 'nao_autenticado', 'limite_excedido', 'indisponivel']) {
      assert.is(await page.locator(`#${codigo}`).count(), 1, codigo);
    }
    await page.close();
  });
}

test.run();
