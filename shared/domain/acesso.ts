// Scopes of API keys and permissions of users (contract §5;
// docs/decisions/0007-keys-scopes-and-permissions.md).

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
  'eventos:ler',
  'eventos:reenviar',
] as const;
export type Escopo = (typeof ESCOPOS)[number];

export const DESCRICAO_ESCOPO: Record<Escopo, string> = {
  'catalogo:ler': 'Ler canais, produtos com preços e materiais com cores.',
  'estoque:ler': 'Ler saldos de peças prontas e de insumos.',
  'estoque:escrever': 'Registrar movimentos de estoque de peças prontas.',
  'cotacoes:ler': 'Ler cotações.',
  'cotacoes:escrever': 'Criar cotações e mudar o status delas.',
  'pedidos:ler': 'Ler pedidos de produção.',
  'pedidos:escrever': 'Criar pedidos de produção.',
  'eventos:ler': 'Ler o registro de eventos da conta e o histórico de entregas de cada evento; só os eventos cujo tipo '
    + 'quem criou a chave tem permissão de receber.',
  'eventos:reenviar': 'Reenviar eventos aos endpoints de webhook da conta: um evento, ou os de um intervalo de tempo.',
};

/** Cost-related data (valor_centavos of orders, custo_* fields) is shown only with this permission. */
export const PERMISSAO_CUSTOS: Permissao = 'custos.ver';
