// Scopes of API keys and permissions of users (contract §5, DESIGN §4).

export const PERMISSOES = [
  'produtos.ver',
  'estoque_produtos.ver',
  'estoque_produtos.movimentar',
  'estoque_insumos.ver',
  'cotacoes.ver',
  'cotacoes.editar',
  'producao.ver',
  'producao.editar',
  'custos.ver',
] as const;
export type Permissao = (typeof PERMISSOES)[number];

export const ESCOPOS = [
  'catalogo:ler',
  'estoque:ler',
  'estoque:escrever',
  'cotacoes:ler',
  'cotacoes:escrever',
  'pedidos:ler',
  'pedidos:escrever',
] as const;
export type Escopo = (typeof ESCOPOS)[number];

export const DESCRICAO_ESCOPO: Record<Escopo, string> = {
  'catalogo:ler': 'Read channels, products with prices, and materials with colors.',
  'estoque:ler': 'Read finished-part and supply balances.',
  'estoque:escrever': 'Post stock movements of finished parts.',
  'cotacoes:ler': 'Read quotations.',
  'cotacoes:escrever': 'Create quotations and change their status.',
  'pedidos:ler': 'Read production orders.',
  'pedidos:escrever': 'Create production orders.',
};

/** Cost-related data (valor_centavos of orders, custo_* fields) is shown only with this permission. */
export const PERMISSAO_CUSTOS: Permissao = 'custos.ver';
