// Quotations (docs/decisions/0029-quotation-and-order-states.md): statuses, the transitions of the
// state machine and who may make them. The database enforces the same table (sql/code/common.sql,
// transicao_permitida); this copy feeds the API's schemas, its documentation and the tests.

export const STATUS_COTACAO = ['rascunho', 'enviada', 'aprovada', 'recusada', 'cancelada', 'expirada'] as const;
export type StatusCotacao = (typeof STATUS_COTACAO)[number];

export const TRANSICOES_COTACAO: Readonly<Record<StatusCotacao, readonly StatusCotacao[]>> = {
  rascunho: ['enviada', 'cancelada'],
  // Back to rascunho is a revision: versao + 1 when it is sent again.
  enviada: ['aprovada', 'recusada', 'rascunho', 'expirada'],
  recusada: ['rascunho'],
  aprovada: [],
  cancelada: [],
  expirada: [],
};

/** Only the daily routine expires a quotation; the API and the screen never do. */
export const STATUS_SO_DA_ROTINA: readonly StatusCotacao[] = ['expirada'];

export const ITEM_COTACAO_TIPOS = ['catalogo', 'avulso'] as const;

/**
 * Who changed something: tela (the application's screen), link (the customer's link), rotina (a
 * routine); 'api' is set by the request pipeline itself.
 */
export type Via = 'api' | 'tela' | 'link' | 'rotina';

/**
 * What the items with a price already known add up to, in centavos. A total past the column's
 * ceiling is refused before any SQL; items priced from a channel's tiers are checked by the
 * database's CHECK as they are priced.
 */
export function totalConhecido(itens: readonly { quantidade: number; preco_unitario_centavos?: number | null }[]): number {
  return itens.reduce((total, item) => total + item.quantidade * (item.preco_unitario_centavos ?? 0), 0);
}
