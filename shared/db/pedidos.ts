// Queries on production orders: the representation of contract §2.1 (items and their stage name
// in one round trip), the list, and creation with every reference checked against the account.
import { z } from 'zod';
import { regraRecusou } from '../errors.ts';
import {
  ITEM_PEDIDO_SITUACOES,
  ITEM_PEDIDO_TIPOS,
  PAGAMENTO_SITUACOES,
  PEDIDO_ORIGENS,
  PEDIDO_TIPOS,
  PRIORIDADES,
  SITUACOES_PEDIDO,
  type PagamentoSituacao,
} from '../domain/producao.ts';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';
import { resolverVariacoes } from './referencias.ts';

const ItemPedidoRow = z.object({
  id: z.string(),
  tipo: z.enum(ITEM_PEDIDO_TIPOS),
  produto_id: z.string().nullable(),
  variacao_id: z.string().nullable(),
  nome: z.string(),
  quantidade: z.number().int(),
  situacao: z.enum(ITEM_PEDIDO_SITUACOES),
  etapa: z.string().nullable(),
});

export const PedidoRow = z.object({
  id: z.string(),
  codigo: z.string(),
  tipo: z.enum(PEDIDO_TIPOS),
  origem: z.enum(PEDIDO_ORIGENS),
  cotacao_id: z.string().nullable(),
  cliente_nome: z.string().nullable(),
  prazo: z.string().nullable(),
  prioridade: z.enum(PRIORIDADES),
  situacao: z.enum(SITUACOES_PEDIDO),
  pagamento_situacao: z.enum(PAGAMENTO_SITUACOES).nullable(),
  itens: z.array(ItemPedidoRow),
  criado_em: z.string(),
  atualizado_em: z.string(),
  finalizado_em: z.string().nullable(),
  valor_centavos: z.number().int().nullable(),
  referencia_externa: z.string().nullable(),
  metadados: z.record(z.string(), z.string()),
  row_version: z.number().int(),
});
export type PedidoRow = z.infer<typeof PedidoRow>;
const PedidoPageRow = PedidoRow.extend({ cursor_ts: z.string() });

const colunas = sql.fragment`
  p.id, p.codigo, p.tipo, p.origem, p.cotacao_id, p.cliente_nome, p.prazo, p.prioridade, p.situacao,
  p.pagamento_situacao,
  coalesce((SELECT json_agg(json_build_object(
                     'id', i.id, 'tipo', i.tipo, 'produto_id', i.produto_id, 'variacao_id', i.variacao_id,
                     'nome', i.nome, 'quantidade', i.quantidade, 'situacao', i.situacao, 'etapa', e.nome)
                   ORDER BY i.posicao)
              FROM pedido_itens i
              LEFT JOIN etapas e ON e.conta_id = i.conta_id AND e.id = i.etapa_id
             WHERE i.conta_id = p.conta_id AND i.pedido_id = p.id), '[]'::json) AS itens,
  -- bigint would arrive as BigInt; money and versions stay far below 2^53.
  p.criado_em, p.atualizado_em, p.finalizado_em, p.valor_centavos::float8 AS valor_centavos, p.referencia_externa, p.metadados,
  p.row_version::float8 AS row_version`;

export async function lerPedido(db: Db, contaId: string, id: string): Promise<PedidoRow | null> {
  // A named statement: parsed and planned once per connection (a one-record read is a hot path).
  return db.maybeOne(sql.prepared('ler_pedido', PedidoRow)`SELECT ${colunas} FROM pedidos_producao p WHERE p.conta_id = ${contaId} AND p.id = ${id}`);
}

export type FiltroPedidos = {
  limite: number;
  cursor?: Posicao;
  atualizado_desde?: string;
  situacao?: PedidoRow['situacao'];
  tipo?: PedidoRow['tipo'];
  prioridade?: PedidoRow['prioridade'];
  cotacao_id?: string;
  referencia_externa?: string;
};

export async function listarPedidos(db: Db, contaId: string, filtro: FiltroPedidos) {
  const page = pageClauses('p', 'criado_em', filtro);
  const filtros = [
    filtro.situacao ? sql.fragment`p.situacao = ${filtro.situacao}` : null,
    filtro.tipo ? sql.fragment`p.tipo = ${filtro.tipo}` : null,
    filtro.prioridade ? sql.fragment`p.prioridade = ${filtro.prioridade}` : null,
    filtro.cotacao_id ? sql.fragment`p.cotacao_id = ${filtro.cotacao_id}` : null,
    filtro.referencia_externa ? sql.fragment`p.referencia_externa = ${filtro.referencia_externa}` : null,
  ].filter((f) => f !== null);
  return db.any(sql.type(PedidoPageRow)`
    SELECT ${colunas}, ${page.cursorColumn}
      FROM pedidos_producao p
     WHERE p.conta_id = ${contaId} AND ${page.where} AND ${sql.join([sql.fragment`true`, ...filtros], sql.fragment` AND `)}
     ${page.orderLimit}`);
}

export type NovoItemPedido =
  | { tipo: 'catalogo'; variacaoId: string; quantidade: number; nome?: string }
  | { tipo: 'cotacao'; cotacaoItemId: string; quantidade?: number }
  | { tipo: 'avulso'; nome: string; quantidade: number };

export type NovoPedido = {
  tipo: PedidoRow['tipo'];
  origem: PedidoRow['origem'];
  cotacaoId?: string | null;
  clienteNome?: string | null;
  prazo?: string | null;
  prioridade?: PedidoRow['prioridade'];
  pagamentoSituacao?: PagamentoSituacao | null;
  valorCentavos?: number | null;
  observacao?: string | null;
  referenciaExterna?: string | null;
  metadados?: Record<string, string> | null;
  /** Without items, an order from a quotation takes every item of the quotation. */
  itens?: readonly NovoItemPedido[];
};

const CotacaoRef = z.object({ status: z.string(), cliente_nome: z.string().nullable(), valor_total_centavos: z.number().int() });
const ItemCotacaoRef = z.object({ id: z.string(), produto_id: z.string().nullable(), variacao_id: z.string().nullable(), nome: z.string(), quantidade: z.number().int() });

/** Creates an order with its items; returns its id. References are checked against the account. */
export async function criarPedido(db: Db, contaId: string, novo: NovoPedido): Promise<string> {
  const cotacaoId = novo.cotacaoId ?? null;
  const cotacao = cotacaoId
    ? await db.maybeOne(sql.type(CotacaoRef)`
        SELECT status, cliente_nome, valor_total_centavos::float8 AS valor_total_centavos FROM cotacoes WHERE conta_id = ${contaId} AND id = ${cotacaoId}`)
    : null;
  if (cotacaoId && !cotacao) throw regraRecusou('referencia_invalida', `cotacao_id: a cotação ${cotacaoId} não existe nesta conta.`);
  if (cotacao && cotacao.status !== 'aprovada') {
    throw regraRecusou('cotacao_nao_aprovada', `cotacao_id: a cotação está ${cotacao.status}; só uma cotação aprovada vira pedido.`);
  }

  const itensDaCotacao = cotacaoId
    ? await db.any(sql.type(ItemCotacaoRef)`
        SELECT id, produto_id, variacao_id, nome, quantidade FROM cotacao_itens
         WHERE conta_id = ${contaId} AND cotacao_id = ${cotacaoId} ORDER BY posicao`)
    : [];
  const pedidos: readonly NovoItemPedido[] = novo.itens ?? itensDaCotacao.map((i) => ({ tipo: 'cotacao', cotacaoItemId: i.id }));
  if (pedidos.length === 0) throw regraRecusou('referencia_invalida', 'itens: o pedido precisa de ao menos um item.');

  const catalogo = pedidos.flatMap((item, i) =>
    item.tipo === 'catalogo' ? [{ campo: `itens[${i}]`, variacaoId: item.variacaoId, quantidade: item.quantidade, i }] : []);
  const variacoes = await resolverVariacoes(db, contaId, catalogo, null);
  const resolvidas = new Map(catalogo.map((c, k) => [c.i, variacoes[k]]));
  const daCotacao = new Map(itensDaCotacao.map((i) => [i.id, i]));

  const linhas = pedidos.map((item, posicao) => {
    if (item.tipo === 'avulso') {
      return { posicao, tipo: 'avulso', produto_id: null, variacao_id: null, cotacao_id: null, cotacao_item_id: null, nome: item.nome, quantidade: item.quantidade };
    }
    if (item.tipo === 'catalogo') {
      const variacao = resolvidas.get(posicao);
      if (!variacao) throw new Error('catalog item without its variation');
      return { posicao, tipo: 'catalogo', produto_id: variacao.produtoId, variacao_id: variacao.variacaoId, cotacao_id: null, cotacao_item_id: null, nome: item.nome ?? variacao.nome, quantidade: item.quantidade };
    }
    const origem = daCotacao.get(item.cotacaoItemId);
    if (!origem) {
      throw regraRecusou('referencia_invalida', cotacaoId
        ? `itens[${posicao}]: o item ${item.cotacaoItemId} não é da cotação ${cotacaoId}.`
        : `itens[${posicao}]: um item do tipo cotacao precisa de cotacao_id no pedido.`);
    }
    return { posicao, tipo: 'cotacao', produto_id: origem.produto_id, variacao_id: origem.variacao_id, cotacao_id: cotacaoId, cotacao_item_id: origem.id, nome: origem.nome, quantidade: item.quantidade ?? origem.quantidade };
  });

  const cliente = novo.tipo === 'cliente';
  const { id } = await db.one(sql.typeAlias('id')`
    INSERT INTO pedidos_producao (conta_id, tipo, origem, cotacao_id, cliente_nome, prazo, prioridade, pagamento_situacao, valor_centavos,
                                  observacao, referencia_externa, metadados)
    VALUES (${contaId}, ${novo.tipo}, ${novo.origem}, ${cotacaoId},
            ${cliente ? (novo.clienteNome ?? cotacao?.cliente_nome ?? null) : null}, ${novo.prazo ?? null}, ${novo.prioridade ?? 'normal'},
            ${cliente ? (novo.pagamentoSituacao ?? 'nao_pago') : null},
            ${cliente ? (novo.valorCentavos ?? cotacao?.valor_total_centavos ?? null) : null}, ${novo.observacao ?? null},
            ${novo.referenciaExterna ?? null}, ${sql.jsonb(novo.metadados ?? {})})
    RETURNING id`);
  await db.query(sql.typeAlias('void')`
    INSERT INTO pedido_itens (conta_id, pedido_id, posicao, tipo, produto_id, variacao_id, cotacao_id, cotacao_item_id, nome, quantidade)
    SELECT ${contaId}, ${id}, x.posicao, x.tipo, x.produto_id, x.variacao_id, x.cotacao_id, x.cotacao_item_id, x.nome, x.quantidade
      FROM jsonb_to_recordset(${sql.jsonb(linhas)}) AS x (posicao int, tipo text, produto_id uuid, variacao_id uuid,
                                                          cotacao_id uuid, cotacao_item_id uuid, nome text, quantidade int)`);
  return id;
}
