// The client's types, checked by tsc (npm run typecheck) and never run: every path, parameter,
// body and answer is typed, a wrong one does not compile (@ts-expect-error fails when it would),
// and a verified event's dados are told apart by tipo.
import { Printfarm, verificarWebhook, type Evento } from '../../client/src/index.ts';
const c = new Printfarm({ urlBase: '', chave: '' });
const p = await c.GET('/pedidos-producao/{id}', { params: { path: { id: 'x' } } });
const codigo: string = p.codigo;
const m = await c.POST('/estoque/movimentos', { body: { tipo: 'entrada', variacao_id: 'x', quantidade: 1, motivo: 'devolucao' } });
const saldo: number = m.saldo_depois;
for await (const e of c.listar('/eventos', { params: { query: { tipo: 'cotacao.aprovada' } } })) { const t: string = e.tipo; void t; }
for await (const canal of c.listar('/canais')) { const n: string = canal.nome; void n; }
const saude = await c.GET('/saude');
const s: 'ok' | string = saude.situacao;
// @ts-expect-error unknown path
await c.GET('/nao-existe');
// @ts-expect-error the path parameter is required
await c.GET('/pedidos-producao/{id}');
// @ts-expect-error not a list
c.listar('/saude');
const ev: Evento = verificarWebhook({ corpo: '', cabecalhos: {} }, { segredo: 'x' });
if (ev.tipo === 'cotacao.status_mudou') { const de: string = ev.dados.de; const via: 'api' | 'tela' | 'link' | 'rotina' = ev.dados.origem.via; void de; void via; }
if (ev.tipo === 'webhook.teste') { const u: null = ev.url; void u; }
// @ts-expect-error dados of another type
if (ev.tipo === 'produto.criado') ev.dados.codigo.length;
const r = await c.POST('/eventos/{id}/reenviar', { params: { path: { id: 'x' }, header: { 'Idempotency-Key': 'k' } }, body: {} });
const n: number = r.entregas_por_hora.limite;
void codigo; void saldo; void s; void n;
