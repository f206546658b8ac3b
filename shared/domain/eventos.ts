// The catalog of webhook event types (contract §6.2): when each is sent, the object it names,
// the fields of its dados, the permission an endpoint's creator needs, and its url (rule 3).
import { z } from 'zod';
import type { Permissao } from './acesso.ts';

export type TipoEvento = {
  tipo: string;
  descricao: string;
  objeto: 'cotacao' | 'link' | 'pedido_producao' | 'insumo' | 'estoque' | 'produto' | 'catalogo' | 'teste';
  campos: string[];
  permissao: Permissao | null;
  /** Grouped types: at most one event per key per window, carrying the latest data. */
  agrupado: boolean;
  /** Resource path under {base_url}, from the event's dados; null for webhook.teste. */
  caminho: (dados: Record<string, unknown>) => string | null;
  /** The dados the contract promises; receivers must tolerate fields added later (§9.3). */
  dados: z.ZodObject;
};

// Each dados names its object; further fields may be added without notice, hence z.looseObject.
const dados = <T extends z.ZodRawShape>(objeto: TipoEvento['objeto'], shape: T) =>
  z.looseObject({ objeto: z.literal(objeto), ...shape });
const id = z.uuid();
const codigo = z.string();
const statusCotacao = z.enum(['rascunho', 'enviada', 'aprovada', 'recusada', 'cancelada', 'expirada']);
const situacaoPedido = z.enum(['aberto', 'em_producao', 'finalizado', 'cancelado']);

const cotacao = (d: Record<string, unknown>) => `/cotacoes/${String(d.id)}`;
const pedido = (d: Record<string, unknown>) => `/pedidos-producao/${String(d.id)}`;
const produto = (d: Record<string, unknown>) => `/produtos/${String(d.id)}`;

export const TIPOS_DE_EVENTO: readonly TipoEvento[] = [
  { tipo: 'cotacao.criada', descricao: 'A quotation is created in the app or through the API.', objeto: 'cotacao', campos: ['id', 'codigo', 'status'], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, status: statusCotacao }) },
  { tipo: 'cotacao.enviada', descricao: 'The quotation is sent to the customer (link or PDF).', objeto: 'cotacao', campos: ['id', 'codigo', 'versao'], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, versao: z.number().int().min(1) }) },
  { tipo: 'cotacao.fechamento_pedido', descricao: 'The customer asks to close the deal on the quotation link.', objeto: 'cotacao', campos: ['id', 'codigo', 'cor_a_combinar'], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, cor_a_combinar: z.boolean() }) },
  { tipo: 'cotacao.status_mudou', descricao: 'Every quotation status change, whoever makes it.', objeto: 'cotacao', campos: ['id', 'codigo', 'de', 'para', 'origem'], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, de: statusCotacao, para: statusCotacao, origem: z.looseObject({ via: z.enum(['api', 'tela', 'link', 'rotina']).describe('Channel of the change.'), chave_id: z.uuid().nullable().describe('The API key that made the change, when it came through the API.') }) }) },
  { tipo: 'cotacao.aprovada', descricao: 'The quotation becomes aprovada.', objeto: 'cotacao', campos: ['id', 'codigo'], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo }) },
  { tipo: 'cotacao.recusada', descricao: 'The quotation becomes recusada.', objeto: 'cotacao', campos: ['id', 'codigo'], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo }) },
  { tipo: 'link.aberto', descricao: 'The customer opens the quotation link; no IP or browser data of the opener is included.', objeto: 'link', campos: ['cotacao_id', 'codigo', 'abertura_n'], permissao: 'cotacoes.ver', agrupado: false, caminho: (d) => `/cotacoes/${String(d.cotacao_id)}`, dados: dados('link', { cotacao_id: id, codigo, abertura_n: z.number().int().min(1) }) },
  { tipo: 'pedido_producao.criado', descricao: 'A production order is created.', objeto: 'pedido_producao', campos: ['id', 'codigo', 'tipo'], permissao: 'producao.ver', agrupado: false, caminho: pedido, dados: dados('pedido_producao', { id, codigo, tipo: z.enum(['cliente', 'estoque']) }) },
  { tipo: 'pedido_producao.situacao_mudou', descricao: 'The order changes situacao.', objeto: 'pedido_producao', campos: ['id', 'codigo', 'situacao_de', 'situacao_para'], permissao: 'producao.ver', agrupado: false, caminho: pedido, dados: dados('pedido_producao', { id, codigo, situacao_de: situacaoPedido, situacao_para: situacaoPedido }) },
  { tipo: 'pedido_producao.concluido', descricao: 'The order is finalized.', objeto: 'pedido_producao', campos: ['id', 'codigo'], permissao: 'producao.ver', agrupado: false, caminho: pedido, dados: dados('pedido_producao', { id, codigo }) },
  { tipo: 'estoque.baixo', descricao: 'A supply balance falls below its minimum; at most one warning per supply per day.', objeto: 'insumo', campos: ['insumo', 'abaixo_do_minimo'], permissao: 'estoque_insumos.ver', agrupado: false, caminho: () => '/estoque-insumos?abaixo_do_minimo=true', dados: dados('insumo', { insumo: z.looseObject({ tipo: z.enum(['material_cor', 'componente', 'embalagem']), id }), abaixo_do_minimo: z.boolean() }) },
  { tipo: 'estoque.movimentado', descricao: 'Entry, exit or adjustment of finished parts; grouped every 60 seconds per variation.', objeto: 'estoque', campos: ['variacao_id', 'local_id', 'tipo'], permissao: 'produtos.ver', agrupado: true, caminho: (d) => `/estoque?variacao_id=${String(d.variacao_id)}`, dados: dados('estoque', { variacao_id: id, local_id: id, tipo: z.enum(['entrada', 'saida', 'ajuste']) }) },
  { tipo: 'produto.criado', descricao: 'A new product in the catalog.', objeto: 'produto', campos: ['id', 'sku'], permissao: 'produtos.ver', agrupado: false, caminho: produto, dados: dados('produto', { id, sku: z.string() }) },
  { tipo: 'produto.atualizado', descricao: 'Price, variation, range or status of a product changed; grouped every 60 seconds per product.', objeto: 'produto', campos: ['id', 'sku'], permissao: 'produtos.ver', agrupado: true, caminho: produto, dados: dados('produto', { id, sku: z.string() }) },
  { tipo: 'catalogo.atualizado_em_massa', descricao: 'One operation (bulk pricing or import) changed more than 20 products.', objeto: 'catalogo', campos: ['quantidade', 'desde'], permissao: 'produtos.ver', agrupado: false, caminho: () => '/produtos?ordem=atualizado_em', dados: dados('catalogo', { quantidade: z.number().int().min(21), desde: z.iso.datetime({ offset: true }) }) },
  { tipo: 'webhook.teste', descricao: "The user triggers a test from the endpoint's screen.", objeto: 'teste', campos: ['mensagem'], permissao: null, agrupado: false, caminho: () => null, dados: dados('teste', { mensagem: z.string() }) },
];

const porTipo = new Map(TIPOS_DE_EVENTO.map((t) => [t.tipo, t]));

export function tipoDeEvento(tipo: string): TipoEvento {
  const found = porTipo.get(tipo);
  if (!found) throw new Error(`unknown event type ${tipo}`);
  return found;
}

/** The url of an event (contract §6 rule 3), or null for webhook.teste. */
export function urlDoEvento(baseUrl: string, tipo: string, dados: Record<string, unknown>): string | null {
  const caminho = tipoDeEvento(tipo).caminho(dados);
  return caminho === null ? null : `${baseUrl}${caminho}`;
}
