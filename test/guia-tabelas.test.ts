// The guide's tables and figures against their sources of truth, so a change to either fails here:
// the error codes (shared/errors.ts and the OpenAPI document's statuses), the 422 motivos, the
// scopes, each route's scope, permission and cost (the route table), the plans' ceilings (as the
// migrations seed them), the lists' filters (the OpenAPI document), the event catalog
// (shared/domain/eventos.ts) and the webhook retry schedule.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { ERRO_POR_STATUS } from '../api/reference/openapi.ts';
import { routes } from '../api/routes/index.ts';
import { committedDocument } from '../ops/openapi.ts';
import { sql } from '#shared/db/pool.ts';
import { RETENTION } from '#shared/db/retention.ts';
import { ESCOPOS } from '#shared/domain/acesso.ts';
import { PRODUTOS_ATE_EVENTOS_POR_PRODUTO, TIPOS_DE_EVENTO } from '#shared/domain/eventos.ts';
import { RETRY_DELAYS_SECONDS } from '#shared/domain/webhooks.ts';
import { MOTIVOS, TITULOS, type Codigo } from '#shared/errors.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { paginas, semCrase, tabela, type Pagina } from './helpers/guia.ts';

const test = suite('the guide\'s tables match the code');
let db: TestDatabase;
let guia: Map<string, string>;

test.before(async () => {
  db = await createTestDatabase();
  guia = new Map((await paginas()).map((p: Pagina) => [p.arquivo, p.markdown]));
});
test.after(async () => db.close());

const page = (arquivo: string) => guia.get(arquivo) ?? '';
const rota = (r: (typeof routes)[number]) => `${r.method} ${r.path}`;
const numero = (cell: string) => Number(/\d+/.exec(cell)?.[0] ?? NaN);

test('erros.md: every codigo with its status and title, and every motivo of a 422', () => {
  const codigos = tabela(page('erros.md'), 'Status', '`codigo`', 'Título').linhas;
  const statusDe = (c: Codigo) => c === 'metodo_nao_permitido' ? 405 : Number(Object.entries(ERRO_POR_STATUS).find(([, cs]) => cs.includes(c))?.[0]);
  assert.equal(
    codigos.map(([status, codigo, titulo]) => [Number(status), semCrase(codigo ?? ''), titulo]),
    (Object.keys(TITULOS) as Codigo[]).map((c) => [statusDe(c), c, TITULOS[c]]),
  );
  const motivos = tabela(page('erros.md'), '`motivo`', 'Quando').linhas.map(([m]) => semCrase(m ?? ''));
  assert.equal([...motivos].sort(), [...MOTIVOS].sort());
  assert.match(page('erros.md'), `São ${Object.keys(TITULOS).length} códigos`);
});

test('chaves.md: every scope, and each route\'s scope and creator\'s permission', () => {
  const escopos = tabela(page('chaves.md'), 'Escopo', 'O que permite').linhas.map(([e]) => semCrase(e ?? ''));
  assert.equal(escopos, [...ESCOPOS]);
  const linhas = tabela(page('chaves.md'), 'Rota', 'Escopo', 'Permissão de quem criou a chave').linhas;
  assert.equal(linhas.map(([r]) => semCrase(r ?? '')), routes.map(rota));
  for (const [celula, escopo, permissao] of linhas) {
    const r = routes.find((x) => rota(x) === semCrase(celula ?? ''));
    assert.is(semCrase(escopo ?? ''), r?.scope ?? 'nenhum', `${celula} scope`);
    // The event log's routes need no fixed permission: each event needs its type's.
    const esperada = r?.permission ?? (r?.scope?.startsWith('eventos:') ? 'a de cada tipo de evento' : 'nenhuma');
    assert.is(semCrase(permissao ?? ''), esperada, `${celula} permission`);
  }
});

test('limites.md: each route\'s cost in units, in the month, its counter and a list\'s at limite=100', () => {
  const linhas = tabela(page('limites.md'), 'Chamada', 'Unidades', 'No mês', 'Conta nas', 'Com `limite=100`').linhas;
  assert.equal(linhas.map(([r]) => semCrase(r ?? '')), routes.map(rota));
  for (const [celula, unidades, mes, contador, com100] of linhas) {
    const r = routes.find((x) => rota(x) === semCrase(celula ?? ''));
    if (!r) throw new Error(`no route ${celula}`);
    const custo = r.cost(new URLSearchParams());
    assert.is(numero(unidades ?? ''), custo.units, `${celula} units`);
    assert.is(numero(mes ?? ''), custo.mes ?? custo.units, `${celula} month`);
    assert.is(contador, custo.classe === 'write' ? 'escritas' : 'leituras', `${celula} counter`);
    const lista = r.method === 'GET' && Boolean(r.conditional && 'lista' in r.conditional);
    assert.is(com100, lista ? String(r.cost(new URLSearchParams('limite=100')).units) : '—', `${celula} at limite=100`);
  }
});

test('limites.md: the ceilings of every plan, as the migrations seed them', async () => {
  const Plano = z.object({ id: z.string() }).catchall(z.union([z.string(), z.number(), z.boolean()]));
  const planos = await db.pool.any(sql.type(Plano)`SELECT * FROM planos ORDER BY chamadas_por_mes`);
  const { cabecalho, linhas } = tabela(page('limites.md'), 'Teto', 'Bancada', 'Oficina', 'Farm');
  assert.equal(planos.map((p) => p.nome), cabecalho.slice(1));
  const colunas: Record<string, string> = {
    'Chaves de API ativas': 'chaves_ativas', 'Endpoints de webhook': 'webhook_endpoints',
    'Leituras por minuto (conta)': 'leituras_por_minuto', 'Escritas por minuto (conta)': 'escritas_por_minuto',
    'Chamadas por mês (conta)': 'chamadas_por_mes', 'Rajada por chave': 'rajada',
    'Recarga da rajada por segundo': 'rajada_recarga_por_segundo', 'Requisições simultâneas por chave': 'simultaneas_por_chave',
    'Requisições simultâneas por conta': 'simultaneas_por_conta', 'Entregas de webhook por hora (conta)': 'entregas_webhook_por_hora',
  };
  assert.equal(linhas.map(([teto]) => teto), Object.keys(colunas));
  for (const [teto = '', ...valores] of linhas) {
    assert.equal(valores.map(Number), planos.map((p) => p[colunas[teto] ?? '']), teto);
  }
  // The same figures where other pages name them.
  const porPlano = (coluna: string) => `Bancada ${planos[0]?.[coluna]}, Oficina ${planos[1]?.[coluna]}, Farm ${planos[2]?.[coluna]}`;
  const prosa = (arquivo: string) => page(arquivo).replace(/\s+/g, ' ');
  assert.match(prosa('chaves.md'), porPlano('chaves_ativas'));
  assert.match(prosa('webhooks.md'), porPlano('webhook_endpoints'));
  assert.match(prosa('webhooks.md'), porPlano('entregas_webhook_por_hora'));
});

test('listas.md: the parameters of every list, as the OpenAPI document declares them', () => {
  const document = committedDocument() as { paths: Record<string, Record<string, { parameters?: { name: string; in: string }[] }>> };
  const linhas = tabela(page('listas.md'), 'Lista', 'Parâmetros além de `limite` e `cursor`').linhas;
  const listas = routes.filter((r) => r.method === 'GET' && r.conditional && 'lista' in r.conditional);
  assert.equal(linhas.map(([l]) => semCrase(l ?? '')), listas.map(rota));
  for (const [lista = '', parametros = ''] of linhas) {
    const declarados = (document.paths[semCrase(lista).slice(4)]?.get?.parameters ?? [])
      .filter((p) => p.in === 'query' && p.name !== 'limite' && p.name !== 'cursor').map((p) => p.name);
    assert.equal(parametros === 'nenhum' ? [] : semCrase(parametros).split(', '), declarados, lista);
  }
});

test('eventos.md: every event type, its permission and its url', () => {
  const linhas = tabela(page('eventos.md'), 'Tipo', 'Quando sai', 'Permissão', '`url`').linhas;
  assert.equal(linhas.map(([t]) => semCrase(t ?? '')), TIPOS_DE_EVENTO.map((t) => t.tipo));
  const marcadores = { id: '<id>', cotacao_id: '<cotacao_id>', variacao_id: '<variacao_id>' };
  for (const [tipo = '', , permissao = '', url = ''] of linhas) {
    const t = TIPOS_DE_EVENTO.find((x) => x.tipo === semCrase(tipo));
    assert.is(semCrase(permissao), t?.permissao ?? 'nenhuma', `${tipo} permission`);
    assert.is(semCrase(url), t?.caminho(marcadores) ?? 'null', `${tipo} url`);
    const agrupado = /agrupado a cada 60 s/.test(linhas.find(([x]) => x === tipo)?.[1] ?? '');
    assert.is(agrupado, t?.agrupado, `${tipo} grouped`);
  }
});

test('webhooks.md: the retry schedule and the bulk catalog threshold', () => {
  const texto = (s: number) => (s < 60 ? `${s} s` : s < 3600 ? `${s / 60} min` : `${s / 3600} h`);
  const calendario = RETRY_DELAYS_SECONDS.map(texto);
  const prosa = page('webhooks.md').replace(/\s+/g, ' ');
  assert.match(prosa, `${calendario.slice(0, -1).join(', ')} e ${calendario.at(-1)}`);
  assert.match(prosa, `são ${RETRY_DELAYS_SECONDS.length + 1} tentativas`);
  const massa = TIPOS_DE_EVENTO.find((t) => t.tipo === 'catalogo.atualizado_em_massa');
  const minimo = (massa?.dados.shape.quantidade as z.ZodNumber | undefined)?.minValue;
  assert.is(minimo, PRODUTOS_ATE_EVENTOS_POR_PRODUTO + 1);
  assert.match(prosa, `mais de ${PRODUTOS_ATE_EVENTOS_POR_PRODUTO} produtos de uma vez`);
  assert.match(prosa, 'envia um único `catalogo.atualizado_em_massa` no lugar dos eventos por produto');
  assert.match(prosa, 'Quem assina `produto.criado` ou `produto.atualizado` deve assinar também `catalogo.atualizado_em_massa`');
  // The catalog says the same where /tipos-de-evento and the reference show it.
  for (const tipo of ['produto.criado', 'produto.atualizado']) {
    assert.match(TIPOS_DE_EVENTO.find((t) => t.tipo === tipo)?.descricao ?? '', `mais de ${PRODUTOS_ATE_EVENTOS_POR_PRODUTO} produtos não envia este evento`);
  }
  assert.match(massa?.descricao ?? '', 'quem assina os eventos de produto deve assinar este também');
});

test('the suspension rule and the event log\'s retention, as the service applies them', async () => {
  const rule = await db.pool.one(sql.type(z.object({ refusals: z.number(), minutes: z.number() }))`SELECT refusals, minutes FROM suspension_rule()`);
  assert.match(page('limites.md').replace(/\s+/g, ' '), `${rule.refusals} recusas seguidas por limite (429) suspendem a chave por ${rule.minutes} minutos`);
  assert.match(page('registro-de-eventos.md').replace(/\s+/g, ' '), `disponível por **${RETENTION.outboxDays} dias** depois de registrado`);
});

test('idempotencia.md: every POST route is listed as requiring the key', () => {
  const posts = routes.filter((r) => r.method === 'POST');
  for (const r of posts) {
    assert.is(r.idempotency, 'required', `${rota(r)} requires Idempotency-Key`);
    assert.match(page('idempotencia.md').split('## A chave')[0] ?? '', `\`POST ${r.path}\``);
  }
});

test.run();
