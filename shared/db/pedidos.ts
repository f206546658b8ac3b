// Queries on production orders: the list (each order as PostgreSQL represents it:
// sql/code/pedidos.sql, pedido_representacao), and creation with every reference checked against the
// account.
import { z } from 'zod';
import { regraRecusou } from '../errors.ts';
import type { PEDIDO_ORIGENS, PEDIDO_TIPOS, PRIORIDADES, SITUACOES_PEDIDO, PagamentoSituacao } from '../domain/producao.ts';
import { pageClauses, type Posicao } from './paging.ts';
import { sql, type Db } from './pool.ts';
import { resolverVariacoes } from './referencias.ts';

/** A page of orders: each one's representation as PostgreSQL builds it (pedido_representacao), and its position. */
const PedidoPageRow = z.object({ id: z.string(), cursor_ts: z.string(), corpo: z.string() });

export type FiltroPedidos = {
  limite: number;
  cursor?: Posicao;
  atualizado_desde?: string;
  situacao?: (typeof SITUACOES_PEDIDO)[number];
  tipo?: (typeof PEDIDO_TIPOS)[number];
  prioridade?: (typeof PRIORIDADES)[number];
  cotacao_id?: string;
  referencia_externa?: string;
};

/** A page of the account's orders, as a caller with these permissions reads them (pedido_representacao). */
export async function listarPedidos(db: Db, contaId: string, filtro: FiltroPedidos, permissoes: readonly string[]) {
  const page = pageClauses('p', 'criado_em', filtro);
  const filtros = [
    filtro.situacao ? sql.fragment`p.situacao = ${filtro.situacao}` : null,
    filtro.tipo ? sql.fragment`p.tipo = ${filtro.tipo}` : null,
    filtro.prioridade ? sql.fragment`p.prioridade = ${filtro.prioridade}` : null,
    filtro.cotacao_id ? sql.fragment`p.cotacao_id = ${filtro.cotacao_id}` : null,
    filtro.referencia_externa ? sql.fragment`p.referencia_externa = ${filtro.referencia_externa}` : null,
  ].filter((f) => f !== null);
  // The representation is a subquery of the select list: built for the page's rows only, after the limit.
  return db.any(sql.type(PedidoPageRow)`
    SELECT p.id, ${page.cursorColumn},
           (SELECT r.corpo FROM pedido_representacao(p.conta_id, p.id, ${sql.array([...permissoes], 'text')}) r) AS corpo
      FROM pedidos_producao p
     WHERE p.conta_id = ${contaId} AND ${page.where} AND ${sql.join([sql.fragment`true`, ...filtros], sql.fragment` AND `)}
     ${page.orderLimit}`);
}

export type NovoItemPedido =
  | { tipo: 'catalogo'; variacaoId: string; quantidade: number; nome?: string }
  | { tipo: 'cotacao'; cotacaoItemId: string; quantidade?: number }
  | { tipo: 'avulso'; nome: string; quantidade: number };

export type NovoPedido = {
  tipo: (typeof PEDIDO_TIPOS)[number];
  origem: (typeof PEDIDO_ORIGENS)[number];
  cotacaoId?: string | null;
  clienteNome?: string | null;
  prazo?: string | null;
  prioridade?: (typeof PRIORIDADES)[number];
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
