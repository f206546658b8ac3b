// Production orders (contract §2.1, §3; docs/decisions/0029-quotation-and-order-states.md): the
// values of their fields and the transitions the database enforces (sql/code/common.sql,
// transicao_permitida). Orders change situacao in the application (the operator CLI stands in for
// it), never through the API.

export const PEDIDO_TIPOS = ['cliente', 'estoque'] as const;
export const PEDIDO_ORIGENS = ['cotacao', 'manual', 'repor', 'api'] as const;
export const PRIORIDADES = ['normal', 'urgente'] as const;
export const SITUACOES_PEDIDO = ['aberto', 'em_producao', 'finalizado', 'cancelado'] as const;
export const PAGAMENTO_SITUACOES = ['nao_pago', 'sinal_pago', 'pago'] as const;
export const ITEM_PEDIDO_TIPOS = ['catalogo', 'cotacao', 'avulso'] as const;
export const ITEM_PEDIDO_SITUACOES = ['ativo', 'finalizado', 'retirado'] as const;

export type SituacaoPedido = (typeof SITUACOES_PEDIDO)[number];
export type PagamentoSituacao = (typeof PAGAMENTO_SITUACOES)[number];
export type ItemPedidoSituacao = (typeof ITEM_PEDIDO_SITUACOES)[number];

export const TRANSICOES_PEDIDO: Readonly<Record<SituacaoPedido, readonly SituacaoPedido[]>> = {
  aberto: ['em_producao', 'cancelado'],
  em_producao: ['finalizado', 'cancelado', 'aberto'],
  finalizado: [],
  cancelado: [],
};

/** Payment only moves forward; paying in full at once is allowed. Null for stock orders. */
export const TRANSICOES_PAGAMENTO: Readonly<Record<PagamentoSituacao, readonly PagamentoSituacao[]>> = {
  nao_pago: ['sinal_pago', 'pago'],
  sinal_pago: ['pago'],
  pago: [],
};

export const TRANSICOES_ITEM: Readonly<Record<ItemPedidoSituacao, readonly ItemPedidoSituacao[]>> = {
  ativo: ['finalizado', 'retirado'],
  finalizado: [],
  retirado: [],
};
