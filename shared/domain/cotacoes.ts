// Quotations (DESIGN §9-10): statuses, the transitions of the state machine and who may make them.
// The database enforces the same table (sql/0005_regras.sql, cotacao_transicao_permitida); this
// copy feeds the API's schemas, its documentation and the tests.

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

/** Who changed something (DESIGN §10); 'api' is set by the request pipeline itself. */
export type Via = 'api' | 'tela' | 'link' | 'rotina';
