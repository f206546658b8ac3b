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
  /** The dados the contract promises; receivers must tolerate fields added later (contract §9.3). */
  dados: z.ZodObject;
};

// Each dados names its object; further fields may be added without notice, hence z.looseObject.
const dados = <T extends z.ZodRawShape>(objeto: TipoEvento['objeto'], shape: T) =>
  z.looseObject({ objeto: z.literal(objeto), ...shape });
const id = z.uuid();
const codigo = z.string();
const statusCotacao = z.enum(['rascunho', 'enviada', 'aprovada', 'recusada', 'cancelada', 'expirada']);
const situacaoPedido = z.enum(['aberto', 'em_producao', 'finalizado', 'cancelado']);

// The external references of the record an event is about
// (docs/decisions/0031-external-references.md).
const REFERENCIAS = ['referencia_externa', 'metadados'];
const referencias = {
  referencia_externa: z.string().nullable().describe('A referencia_externa do registro; null quando não foi informada.'),
  metadados: z.record(z.string(), z.string()).describe('Os metadados do registro; {} quando não foram informados.'),
};

/**
 * One operation (a transaction) that creates or changes more than this many products sends one
 * catalogo.atualizado_em_massa instead of their produto.* events (sql/code/catalogo.sql,
 * catalogo_emitir_eventos, holds the same number; docs/decisions/0039-bulk-catalog-event.md).
 */
export const PRODUTOS_ATE_EVENTOS_POR_PRODUTO = 20;
const EM_MASSA = `Uma operação que cria ou altera mais de ${PRODUTOS_ATE_EVENTOS_POR_PRODUTO} produtos não envia este evento: `
  + 'envia um único catalogo.atualizado_em_massa no lugar dos eventos de cada produto; assine os dois.';

const cotacao = (d: Record<string, unknown>) => `/cotacoes/${String(d.id)}`;
const pedido = (d: Record<string, unknown>) => `/pedidos-producao/${String(d.id)}`;
const produto = (d: Record<string, unknown>) => `/produtos/${String(d.id)}`;

export const TIPOS_DE_EVENTO: readonly TipoEvento[] = [
  { tipo: 'cotacao.criada', descricao: 'Uma cotação é criada no aplicativo ou pela API.', objeto: 'cotacao', campos: ['id', 'codigo', 'status', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, status: statusCotacao, ...referencias }) },
  { tipo: 'cotacao.enviada', descricao: 'A cotação é enviada ao cliente (link ou PDF).', objeto: 'cotacao', campos: ['id', 'codigo', 'versao', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, versao: z.number().int().min(1), ...referencias }) },
  { tipo: 'cotacao.fechamento_pedido', descricao: 'O cliente pede para fechar o negócio pelo link da cotação.', objeto: 'cotacao', campos: ['id', 'codigo', 'cor_a_combinar', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, cor_a_combinar: z.boolean(), ...referencias }) },
  { tipo: 'cotacao.status_mudou', descricao: 'Toda mudança de status de uma cotação, feita por quem for.', objeto: 'cotacao', campos: ['id', 'codigo', 'de', 'para', 'origem', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, de: statusCotacao, para: statusCotacao, origem: z.looseObject({ via: z.enum(['api', 'tela', 'link', 'rotina']).describe('Canal da mudança.'), chave_id: z.uuid().nullable().describe('A chave de API que fez a mudança, quando ela veio pela API.') }), ...referencias }) },
  { tipo: 'cotacao.aprovada', descricao: 'A cotação passa a aprovada.', objeto: 'cotacao', campos: ['id', 'codigo', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, ...referencias }) },
  { tipo: 'cotacao.recusada', descricao: 'A cotação passa a recusada.', objeto: 'cotacao', campos: ['id', 'codigo', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: cotacao, dados: dados('cotacao', { id, codigo, ...referencias }) },
  { tipo: 'link.aberto', descricao: 'O cliente abre o link da cotação; nenhum dado de IP ou navegador de quem abriu vai no evento.', objeto: 'link', campos: ['cotacao_id', 'codigo', 'abertura_n', ...REFERENCIAS], permissao: 'cotacoes.ver', agrupado: false, caminho: (d) => `/cotacoes/${String(d.cotacao_id)}`, dados: dados('link', { cotacao_id: id, codigo, abertura_n: z.number().int().min(1), ...referencias }) },
  { tipo: 'pedido_producao.criado', descricao: 'Um pedido de produção é criado.', objeto: 'pedido_producao', campos: ['id', 'codigo', 'tipo', ...REFERENCIAS], permissao: 'producao.ver', agrupado: false, caminho: pedido, dados: dados('pedido_producao', { id, codigo, tipo: z.enum(['cliente', 'estoque']), ...referencias }) },
  { tipo: 'pedido_producao.situacao_mudou', descricao: 'O pedido muda de situacao.', objeto: 'pedido_producao', campos: ['id', 'codigo', 'situacao_de', 'situacao_para', ...REFERENCIAS], permissao: 'producao.ver', agrupado: false, caminho: pedido, dados: dados('pedido_producao', { id, codigo, situacao_de: situacaoPedido, situacao_para: situacaoPedido, ...referencias }) },
  { tipo: 'pedido_producao.concluido', descricao: 'O pedido é finalizado.', objeto: 'pedido_producao', campos: ['id', 'codigo', ...REFERENCIAS], permissao: 'producao.ver', agrupado: false, caminho: pedido, dados: dados('pedido_producao', { id, codigo, ...referencias }) },
  { tipo: 'estoque.baixo', descricao: 'O saldo de um insumo fica abaixo do mínimo; no máximo um aviso por insumo por dia.', objeto: 'insumo', campos: ['insumo', 'abaixo_do_minimo'], permissao: 'estoque_insumos.ver', agrupado: false, caminho: () => '/estoque-insumos?abaixo_do_minimo=true', dados: dados('insumo', { insumo: z.looseObject({ tipo: z.enum(['material_cor', 'componente', 'embalagem']), id }), abaixo_do_minimo: z.boolean() }) },
  { tipo: 'estoque.movimentado', descricao: 'Entrada, saída ou ajuste de peças prontas; agrupado a cada 60 segundos por variação.', objeto: 'estoque', campos: ['variacao_id', 'local_id', 'tipo', 'movimento_id', ...REFERENCIAS], permissao: 'produtos.ver', agrupado: true, caminho: (d) => `/estoque?variacao_id=${String(d.variacao_id)}`, dados: dados('estoque', { variacao_id: id, local_id: id, tipo: z.enum(['entrada', 'saida', 'ajuste']), movimento_id: id.describe('O movimento mais recente da variação, o que estes dados descrevem.'), ...referencias }) },
  { tipo: 'produto.criado', descricao: `Um produto novo no catálogo. ${EM_MASSA}`, objeto: 'produto', campos: ['id', 'sku'], permissao: 'produtos.ver', agrupado: false, caminho: produto, dados: dados('produto', { id, sku: z.string() }) },
  { tipo: 'produto.atualizado', descricao: `Preço, variação, faixa ou status de um produto mudou; agrupado a cada 60 segundos por produto. ${EM_MASSA}`, objeto: 'produto', campos: ['id', 'sku'], permissao: 'produtos.ver', agrupado: true, caminho: produto, dados: dados('produto', { id, sku: z.string() }) },
  { tipo: 'catalogo.atualizado_em_massa', descricao: `Uma operação (precificação em massa ou importação) criou ou alterou mais de ${PRODUTOS_ATE_EVENTOS_POR_PRODUTO} produtos. Sai no lugar dos produto.criado e produto.atualizado desses produtos, que não são enviados: quem assina os eventos de produto deve assinar este também, e ler GET /produtos?ordem=atualizado_em&atualizado_desde=<desde>.`, objeto: 'catalogo', campos: ['quantidade', 'desde'], permissao: 'produtos.ver', agrupado: false, caminho: () => '/produtos?ordem=atualizado_em', dados: dados('catalogo', { quantidade: z.number().int().min(PRODUTOS_ATE_EVENTOS_POR_PRODUTO + 1), desde: z.iso.datetime({ offset: true }) }) },
  { tipo: 'webhook.teste', descricao: 'O usuário dispara um teste na tela do endpoint.', objeto: 'teste', campos: ['mensagem'], permissao: null, agrupado: false, caminho: () => null, dados: dados('teste', { mensagem: z.string() }) },
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
