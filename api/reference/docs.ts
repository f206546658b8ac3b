// The API reference page (GET /docs), rendered by Redoc from GET /v1/openapi.json, with every
// asset served by the service itself so it works offline; the page the problem `type`s of error
// responses point to (GET /docs/erros); the changelog (GET /docs/mudancas); and the integrator's
// guide (GET /docs/guia and its pages, api/reference/guia.ts).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Request, Response, Next } from 'restify';
import type restify from 'restify';
import { projectRoot } from '#shared/config.ts';
import { TITULOS, type Codigo } from '#shared/errors.ts';
import { paginasDoGuia } from './guia.ts';
import { CHANGELOG_PATH, GUIA_PATH } from './openapi.ts';
import { requestState } from '../http/request-state.ts';

const require = createRequire(import.meta.url);
// Redoc's attribution link shows a logo from its CDN; served from here instead, so the page makes
// no request outside the service (the browser test fails if a new version adds another).
const REDOC_LOGO = 'https://cdn.redoc.ly/redoc/logo-mini.svg';
// Redoc's chrome that its labels option (REDOC_LABELS) does not reach, in the reader's language:
// each text replaced where the bundle renders it (test/language.test.ts fails if a new version of
// Redoc moves one).
export const REDOC_TEXTS: readonly (readonly [string, string])[] = [
  ['placeholder:"Search..."', 'placeholder:"Buscar..."'],
  [',"License:"," ",', ',"Licença:"," ",'],
  ['n.createElement(pg,null,"Content type")', 'n.createElement(pg,null,"Tipo de conteúdo")'],
  ['ariaLabel:"Content type"', 'ariaLabel:"Tipo de conteúdo"'],
  ['n.createElement(Ab,null,"Authorizations:")', 'n.createElement(Ab,null,"Autorizações:")'],
  ['n.createElement(vp,null,e," Parameters")', 'n.createElement(vp,null,"Parâmetros (",e,")")'],
  ['"Request Body schema: "', '"Esquema do corpo da requisição: "'],
  ['"Response Schema: "', '"Esquema da resposta: "'],
  ['" Response Headers "', '" Cabeçalhos da resposta "'],
  ['n.createElement(Jg,null,"required")', 'n.createElement(Jg,null,"obrigatório")'],
  ['n.createElement(qv,null,"required")', 'n.createElement(qv,null,"obrigatório")'],
  ['" Expand all "', '" Expandir tudo "'],
  ['" Collapse all "', '" Recolher tudo "'],
  ['open:t},"Copy")', 'open:t},"Copiar")'],
  ['"Copied"', '"Copiado"'],
  ['"Not supported in your browser"', '"Seu navegador não permite copiar"'],
  ['i?"Hide pattern":"Show pattern"', 'i?"Esconder o padrão":"Mostrar o padrão"'],
];
const redocBundle = REDOC_TEXTS.reduce((bundle, [from, to]) => bundle.replaceAll(from, to),
  readFileSync(require.resolve('redoc/bundles/redoc.standalone.js'), 'utf8').replaceAll(REDOC_LOGO, '/docs/redoc-logo.svg'));
const redocLogo = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16" width="16" height="16"><rect width="16" height="16" rx="3" fill="#32329f"/><path d="M4 4h5a3 3 0 0 1 0 6H7l3 2H7l-3-2V4z" fill="#fff"/></svg>';

// Only this origin: a page that tried to load anything from elsewhere would be blocked (and the
// browser test would see it). Redoc's bundle compiles JSON Schemas (eval) and styles inline.
const CSP = [
  "default-src 'self'",
  "script-src 'self' 'unsafe-eval'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "worker-src 'self' blob:",
  "connect-src 'self'",
].join('; ');

const page = (title: string, body: string) => `<!doctype html>
<html lang="pt-BR">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
<link rel="icon" href="/docs/redoc-logo.svg" type="image/svg+xml">
<style>body{margin:0;font-family:system-ui,sans-serif}main{max-width:52rem;margin:2rem auto;padding:0 1rem;line-height:1.5}
code{background:#f3f3f3;padding:.1rem .3rem;border-radius:3px}dt{font-weight:600;margin-top:1rem}</style>
</head>
<body>
${body}
</body>
</html>
`;

const referencePage = page('API v1 — referência', '<div id="redoc"></div>\n<script src="/docs/redoc.standalone.js"></script>\n<script src="/docs/init.js"></script>');

// Redoc's own labels, in the reader's language (the rest of its chrome is not configurable).
const REDOC_LABELS = {
  enum: 'Valores', enumSingleValue: 'Valor', enumArray: 'Itens', default: 'Padrão', deprecated: 'Obsoleto',
  example: 'Exemplo', examples: 'Exemplos', recursive: 'Recursivo', arrayOf: 'Lista de ', webhook: 'Evento',
  const: 'Valor', noResultsFound: 'Nada encontrado', download: 'Baixar', downloadSpecification: 'Baixar a especificação OpenAPI',
  responses: 'Respostas', callbackResponses: 'Respostas do callback', requestSamples: 'Exemplos de requisição',
  responseSamples: 'Exemplos de resposta',
};

const initScript = `Redoc.init('/v1/openapi.json', {
  expandResponses: '200,201',
  jsonSampleExpandLevel: 3,
  hideHostname: false,
  pathInMiddlePanel: true,
  sortTagsAlphabetically: false,
  labels: ${JSON.stringify(REDOC_LABELS)},
}, document.getElementById('redoc'));
`;

/** What each error code means (contract §7), for the page problem types link to. */
const CONDICOES: Record<Codigo, string> = {
  dados_invalidos: 'Dados, filtro, cursor ou cabeçalho inválidos; veja <code>erros[]</code>.',
  nao_autenticado: 'Chave ausente, malformada, desconhecida, revogada ou expirada (mesma resposta para todos os casos).',
  escopo_insuficiente: 'Escopo insuficiente, conta bloqueada, módulo desligado, permissão retirada de quem criou a chave, ou chave suspensa.',
  nao_encontrado: 'O registro não existe nesta conta (ou o caminho não existe).',
  metodo_nao_permitido: 'O caminho existe, mas não com este método; veja o cabeçalho <code>Allow</code>.',
  tempo_esgotado: 'O corpo do POST não chegou inteiro em 5 segundos.',
  idempotencia_em_andamento: 'Uma requisição com a mesma Idempotency-Key ainda está em andamento.',
  corpo_grande_demais: 'Corpo acima de 64 KB.',
  tipo_nao_suportado: 'Content-Type diferente de application/json.',
  saldo_insuficiente: 'Uma regra de negócio recusou a operação; <code>motivo</code> diz qual (saldo_insuficiente, referencia_invalida, fora_do_multiplo, sku_ambiguo, transicao_invalida…). Num lote de movimentos recusado (<code>motivo</code> lote_recusado), <code>recusas</code> traz a posição (<code>indice</code>), o <code>motivo</code> e a <code>mensagem</code> de cada item recusado, e nada foi gravado.',
  idempotencia_conflito: 'A Idempotency-Key já foi usada com outro corpo.',
  limite_excedido: 'Limite de uso excedido (rajada, minuto, mês ou simultâneas); espere <code>Retry-After</code> segundos.',
  erro_interno: 'Erro interno; o detalhe está no log do serviço sob o <code>requisicao_id</code>.',
  indisponivel: 'API desligada, sob pressão ou no limite global da plataforma; espere <code>Retry-After</code> segundos.',
};

// The changelog, where changes of the API and of the plans' ceilings are announced (contract §9.4),
// served as the Markdown it is: it reads as plain text.
const changelog = readFileSync(path.join(projectRoot, 'CHANGELOG.md'), 'utf8');

const errorsPage = page(
  'API v1 — códigos de erro',
  `<main><h1>Códigos de erro</h1>
<p>Erros usam <code>application/problem+json</code> com <code>type</code>, <code>title</code>, <code>status</code>,
<code>detail</code>, <code>codigo</code> e <code>requisicao_id</code>. Programas devem ler <code>codigo</code>.
<a href="/docs">Referência completa</a>; o <a href="${GUIA_PATH}/erros">guia do integrador</a> mostra como tratar cada um;
mudanças no <a href="${CHANGELOG_PATH}">histórico de mudanças</a>.</p>
<dl>
${(Object.keys(TITULOS) as Codigo[]).map((c) => `<dt id="${c}"><code>${c}</code> — ${TITULOS[c]}</dt><dd>${CONDICOES[c]}</dd>`).join('\n')}
</dl></main>`,
);

export function registerDocs(server: restify.Server): void {
  const serve = (path: string, type: string, body: string | Buffer, headers: Record<string, string> = {}) =>
    server.get({ path, name: `docs:${path}` }, (req: Request, res: Response, next: Next) => {
      requestState(req).route = 'docs';
      res.sendRaw(200, body, { 'Content-Type': type, 'Cache-Control': 'public, max-age=300', ...headers });
      next();
    });
  serve('/docs', 'text/html; charset=utf-8', referencePage, { 'Content-Security-Policy': CSP });
  serve('/docs/erros', 'text/html; charset=utf-8', errorsPage, { 'Content-Security-Policy': CSP });
  serve(CHANGELOG_PATH, 'text/plain; charset=utf-8', changelog, { 'X-Content-Type-Options': 'nosniff' });
  for (const pagina of paginasDoGuia()) serve(pagina.caminho, 'text/html; charset=utf-8', pagina.html, { 'Content-Security-Policy': CSP });
  serve('/docs/init.js', 'text/javascript; charset=utf-8', initScript);
  serve('/docs/redoc.standalone.js', 'text/javascript; charset=utf-8', redocBundle);
  serve('/docs/redoc-logo.svg', 'image/svg+xml', redocLogo);
}
