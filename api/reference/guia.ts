// The integrator's guide (docs/guia/*.md), served as HTML at /docs/guia (the folder's README.md)
// and /docs/guia/<page> (<page>.md). Links are written for the repository, where they work as
// relative links, and rewritten here for the service: a page of the guide to its address, the
// changelog to /docs/mudancas and the OpenAPI document to the reference page.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Marked, type Tokens } from 'marked';
import { projectRoot } from '#shared/config.ts';
import { GUIA_PATH } from './openapi.ts';

export const GUIA_DIR = path.join(projectRoot, 'docs', 'guia');

// Where a link of the repository's Markdown leads on the service.
const SERVICE_LINKS: Record<string, string> = {
  '../../CHANGELOG.md': '/docs/mudancas',
  '../openapi.json': '/docs',
};

/** The address a link of a guide page has on the service (anchors and other addresses unchanged). */
export function linkOnService(href: string): string {
  const [target = '', anchor] = href.split('#', 2);
  const suffix = anchor === undefined ? '' : `#${anchor}`;
  const mapped = SERVICE_LINKS[target];
  if (mapped) return `${mapped}${suffix}`;
  const page = /^([a-z0-9-]+)\.md$/i.exec(target)?.[1];
  if (!page) return href;
  return `${page === 'README' ? GUIA_PATH : `${GUIA_PATH}/${page}`}${suffix}`;
}

/** A heading's anchor as GitHub makes it, so the same #links work in the repository and here. */
export function anchorOf(heading: string): string {
  return heading.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').trim().replace(/\s/g, '-');
}

const escapeHtml = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

const marked = new Marked({
  gfm: true,
  // A fence's info string is its language and, for the tests, a name (```ts trecho=...): only the language is shown.
  walkTokens(token) {
    if (token.type === 'link') (token as Tokens.Link).href = linkOnService((token as Tokens.Link).href);
    if (token.type === 'code') (token as Tokens.Code).lang = ((token as Tokens.Code).lang ?? '').split(/\s+/)[0];
  },
  renderer: {
    heading({ tokens, depth, text }) {
      return `<h${depth} id="${escapeHtml(anchorOf(text.replace(/`/g, '')))}">${this.parser.parseInline(tokens)}</h${depth}>\n`;
    },
  },
});

export type PaginaDoGuia = { arquivo: string; caminho: string; titulo: string; html: string };

const NAV = `<nav><a href="${GUIA_PATH}">Guia do integrador</a> · <a href="/docs">Referência da API</a> · `
  + '<a href="/docs/erros">Códigos de erro</a> · <a href="/docs/mudancas">Histórico de mudanças</a></nav>';

const STYLE = `body{margin:0;font-family:system-ui,sans-serif;color:#1d1d1f}
main{max-width:54rem;margin:0 auto 3rem;padding:0 1rem;line-height:1.55}
nav{padding:.75rem 1rem;background:#32329f;color:#fff}nav a{color:#fff}
code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px;font-size:.92em}
pre{background:#f6f8fa;padding:.8rem 1rem;overflow-x:auto;border-radius:4px}pre code{background:none;padding:0}
table{border-collapse:collapse;margin:1rem 0}th,td{border:1px solid #d0d7de;padding:.3rem .6rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}blockquote{margin:1rem 0;padding:.2rem 1rem;border-left:4px solid #32329f;background:#f7f7fc}`;

function render(titulo: string, body: string): string {
  return `<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(titulo)} — guia do integrador</title>
<link rel="icon" href="/docs/redoc-logo.svg" type="image/svg+xml">
<style>${STYLE}</style>
</head>
<body>
${NAV}
<main>
${body}</main>
</body>
</html>
`;
}

/** Every page of the guide, rendered, with the address it is served at. */
export function paginasDoGuia(): PaginaDoGuia[] {
  return readdirSync(GUIA_DIR).filter((f) => f.endsWith('.md')).sort().map((arquivo) => {
    const markdown = readFileSync(path.join(GUIA_DIR, arquivo), 'utf8');
    const titulo = /^# (.+)$/m.exec(markdown)?.[1]?.replace(/`/g, '') ?? arquivo;
    const pagina = arquivo.replace(/\.md$/, '');
    return {
      arquivo,
      caminho: pagina === 'README' ? GUIA_PATH : `${GUIA_PATH}/${pagina}`,
      titulo,
      html: render(titulo, marked.parse(markdown, { async: false })),
    };
  });
}
