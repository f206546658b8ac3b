// The changelog (issue 18, item 11; contract §9.4: ceiling changes are announced in a changelog):
// CHANGELOG.md in Keep a Changelog form, saying near the top how a change of a ceiling of §8.1 is
// announced; linked from the README and from the API reference, and served by the service itself.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { CHANGELOG_PATH } from '../api/reference/openapi.ts';
import { projectRoot } from '#shared/config.ts';
import { startTestApp, type TestApp } from './helpers/app.ts';
import { request } from './helpers/http.ts';

const test = suite('changelog');
let app: TestApp;
let changelog: string;

test.before(async () => {
  app = await startTestApp();
  changelog = await readFile(path.join(projectRoot, 'CHANGELOG.md'), 'utf8');
});
test.after(async () => app.stop());

const headings = (text: string) => [...text.matchAll(/^(#{1,3}) (.+)$/gm)].map((m) => ({ level: m[1]?.length, title: m[2] ?? '' }));

test('CHANGELOG.md is in Keep a Changelog form, with the unreleased changes first', () => {
  const all = headings(changelog);
  assert.equal(all[0], { level: 1, title: 'Changelog' });
  assert.match(changelog, 'https://keepachangelog.com/pt-BR/');
  const versions = all.filter((h) => h.level === 2 && h.title.startsWith('['));
  assert.is(versions[0]?.title, '[Não lançado]');
  const kinds = new Set(['Adicionado', 'Alterado', 'Obsoleto', 'Removido', 'Corrigido', 'Segurança']);
  for (const h of all.filter((x) => x.level === 3)) assert.ok(kinds.has(h.title), `### ${h.title} is a kind of change`);
});

test('near the top, it says that a ceiling change is announced there, with its date, before it takes effect', () => {
  const all = headings(changelog);
  const ceilings = all.findIndex((h) => h.level === 2 && h.title === 'Mudanças nos tetos de uso');
  const firstVersion = all.findIndex((h) => h.level === 2 && h.title.startsWith('['));
  assert.ok(ceilings > 0 && ceilings < firstVersion, 'the section comes before every version');
  const section = changelog.slice(changelog.indexOf('## Mudanças nos tetos de uso'), changelog.indexOf('## [Não lançado]'));
  for (const phrase of ['§8.1', '§9.4', '**antes de valer**', '**data em que passa a valer**', '**Tetos:**', 'GET /conta']) {
    assert.match(section, phrase);
  }
  // Every ceiling of §8.1 is named.
  for (const ceiling of ['chaves ativas', 'endpoints de webhook', 'leituras e escritas por', 'chamadas por mês', 'rajada',
    'requisições simultâneas', 'entregas de webhook por hora']) {
    assert.match(section.replace(/\s+/g, ' '), ceiling);
  }
});

test('the README links it', async () => {
  assert.match(await readFile(path.join(projectRoot, 'README.md'), 'utf8'), '](CHANGELOG.md)');
});

test('the service serves it, and the API reference and the error page link it', async () => {
  const origin = new URL(app.baseUrl).origin;
  const served = await request(`${origin}${CHANGELOG_PATH}`);
  assert.is(served.status, 200);
  assert.is(served.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.is(served.text, changelog);
  const openapi = await request(`${app.baseUrl}/openapi.json`);
  assert.match(openapi.body.info.description, `(${CHANGELOG_PATH})`);
  assert.match(openapi.body.info.description, 'tetos de uso');
  const errors = await request(`${origin}/docs/erros`);
  assert.match(errors.text, `href="${CHANGELOG_PATH}"`);
});

test.run();
