// Realistic examples for the reference page, one per operation (the demo account's data).
// test/openapi.test.ts checks each against its route's schema, so they cannot drift.

const CONTA = '00000000-0000-4000-8000-00000000d3e0';
const CANAL_LOJA = '3c9e7a52-1f4b-4d7e-8a21-6b0c5d9e2f11';
const PRODUTO_VASO = 'b7e3f1a2-5c4d-4e6f-8a9b-0c1d2e3f4a5b';
const VARIACAO_VASO_M = 'c8f4a2b3-6d5e-4f7a-9b0c-1d2e3f4a5b6c';

export const exemploCotacao = {
  id: 'e2a4c6d8-0b1c-4d3e-8f5a-7b9c1d3e5f70',
  codigo: 'COT-000123',
  status: 'enviada',
  versao: 2,
  cliente_nome: 'Estúdio Prisma',
  canal_id: CANAL_LOJA,
  validade: '2026-12-07',
  observacao: 'Cores a combinar com o cliente.',
  itens: [
    { id: 'f1a3b5c7-d9e1-4f2a-8b4c-6d8e0f2a4b61', tipo: 'catalogo', produto_id: PRODUTO_VASO, variacao_id: VARIACAO_VASO_M, nome: 'Vaso geométrico Médio', quantidade: 12, preco_unitario_centavos: 5310 },
    { id: 'a2b4c6d8-e0f2-4a1b-9c3d-5e7f9a1b3c52', tipo: 'avulso', produto_id: null, variacao_id: null, nome: 'Peça sob medida (modelo do cliente)', quantidade: 1, preco_unitario_centavos: 12000 },
  ],
  valor_total_centavos: 75720,
  enviada_em: '2026-11-20T16:42:11.000Z',
  criado_em: '2026-11-18T13:05:00.000Z',
  atualizado_em: '2026-11-20T16:42:11.000Z',
  referencia_externa: 'ERP-ORC-5531',
  metadados: { vendedor: 'Ana', origem: 'feira' },
};

export const exemploNovaCotacao = {
  cliente_nome: 'Estúdio Prisma',
  canal_id: CANAL_LOJA,
  validade: '2026-12-07',
  itens: [
    { tipo: 'catalogo', variacao_id: VARIACAO_VASO_M, quantidade: 12 },
    { tipo: 'avulso', nome: 'Peça sob medida (modelo do cliente)', quantidade: 1, preco_unitario_centavos: 12000 },
  ],
  referencia_externa: 'ERP-ORC-5531',
  metadados: { vendedor: 'Ana', origem: 'feira' },
};

export const exemploPedido = {
  id: '5d7f9b1d-3f5a-4c7e-9a1c-3e5a7c9e1b24',
  codigo: 'OP-000087',
  tipo: 'cliente',
  origem: 'cotacao',
  cotacao_id: exemploCotacao.id,
  cliente_nome: 'Estúdio Prisma',
  prazo: '2026-11-30',
  prioridade: 'urgente',
  situacao: 'em_producao',
  pagamento_situacao: 'sinal_pago',
  itens: [
    { id: '7b9d1f3b-5d7f-4a9b-8d1f-3b5d7f9b1d35', tipo: 'cotacao', produto_id: PRODUTO_VASO, variacao_id: VARIACAO_VASO_M, nome: 'Vaso geométrico Médio', quantidade: 12, situacao: 'ativo', etapa: 'Impressão' },
  ],
  criado_em: '2026-11-21T09:15:00.000Z',
  atualizado_em: '2026-11-22T17:48:30.000Z',
  finalizado_em: null,
  valor_centavos: 75720,
  referencia_externa: 'ERP-OP-8812',
  metadados: {},
};

export const exemploNovoPedido = {
  tipo: 'estoque',
  prazo: '2026-12-05',
  itens: [{ tipo: 'catalogo', variacao_id: VARIACAO_VASO_M, quantidade: 20 }],
  referencia_externa: 'ERP-REP-0042',
};

export const exemplos = { CONTA, CANAL_LOJA, PRODUTO_VASO, VARIACAO_VASO_M };

export const exemploProduto = {
  id: PRODUTO_VASO,
  sku: 'VASO-GEO',
  nome: 'Vaso geométrico',
  descricao: 'Vaso geométrico impresso em 3D.',
  ativo: true,
  variacoes: [
    {
      id: VARIACAO_VASO_M,
      sku: 'VASO-GEO-M',
      nome: 'Médio',
      ativa: true,
      quantidade_minima: 1,
      multiplo: 1,
      partes: [],
      precos: [
        { canal_id: CANAL_LOJA, faixas: [{ a_partir_de: 1, preco_centavos: 5900 }, { a_partir_de: 10, preco_centavos: 5310 }] },
        { canal_id: '8a1b2c3d-4e5f-4a6b-9c7d-0e1f2a3b4c5d', faixas: [{ a_partir_de: 1, preco_centavos: 7080 }] },
      ],
    },
  ],
  criado_em: '2026-03-02T11:20:00.000Z',
  atualizado_em: '2026-11-19T08:03:44.000Z',
};

export const exemploMaterial = {
  id: 'd4e6f8a0-b2c4-4d6e-8f0a-2b4c6d8e0f13',
  nome: 'PLA',
  tipo: 'filamento',
  cores: [
    { id: '1e3a5c7e-9a1c-4e3a-8c5e-7a9c1e3a5c79', nome: 'Preto', hex: '#111111', ativa: true },
    { id: '2f4b6d8f-0b2d-4f4b-9d6f-8b0d2f4b6d80', nome: 'Branco', hex: '#F5F5F5', ativa: true },
  ],
  custo_por_kg_centavos: 12000,
  criado_em: '2026-03-01T10:10:00.000Z',
  atualizado_em: '2026-10-30T15:40:00.000Z',
};

export const exemploSaldo = {
  id: '6c8e0a2c-4e6a-4c8e-9a2c-4e6a8c0e2a47',
  variacao_id: VARIACAO_VASO_M,
  produto_id: PRODUTO_VASO,
  parte_id: null,
  local_id: '0b2d4f6b-8d0f-4b2d-8f6b-0d2f4b6d8f92',
  local_tipo: 'proprio',
  saldo: 14,
  criado_em: '2026-03-02T11:20:00.000Z',
  atualizado_em: '2026-11-22T18:12:05.000Z',
};

export const exemploSaldoInsumo = {
  id: '2f4b6d8f-0b2d-4f4b-9d6f-8b0d2f4b6d80',
  insumo: { tipo: 'material_cor', id: '2f4b6d8f-0b2d-4f4b-9d6f-8b0d2f4b6d80' },
  nome: 'PLA Branco',
  unidade: 'g',
  saldo: 800,
  minimo: 1000,
  abaixo_do_minimo: true,
  criado_em: '2026-03-01T10:10:00.000Z',
  atualizado_em: '2026-11-22T09:30:00.000Z',
};

export const exemploNovoMovimento = {
  tipo: 'saida', variacao_id: VARIACAO_VASO_M, quantidade: 2, motivo: 'venda_marketplace', observacao: 'Pedido 4471 do marketplace',
  referencia_externa: 'MKT-2000004471', metadados: { canal: 'marketplace', loja: 'Loja Prisma 3D' },
};

export const exemploMovimento = {
  id: '3a5c7e9a-1c3e-4a5c-9e7a-1c3e5a7c9e08',
  tipo: 'saida',
  variacao_id: VARIACAO_VASO_M,
  parte_id: null,
  quantidade: 2,
  saldo_antes: 14,
  saldo_depois: 12,
  motivo: 'venda_marketplace',
  criado_em: '2026-11-23T14:02:17.000Z',
  referencia_externa: 'MKT-2000004471',
  metadados: { canal: 'marketplace', loja: 'Loja Prisma 3D' },
};

// One marketplace order of two SKUs, posted together.
export const exemploNovoLote = {
  movimentos: [
    { tipo: 'saida', sku: 'VASO-GEO-M', quantidade: 2, motivo: 'venda_marketplace', referencia_externa: 'MKT-2000004480' },
    { tipo: 'saida', sku: 'LUMINARIA-LUA-P', quantidade: 1, motivo: 'venda_marketplace', referencia_externa: 'MKT-2000004480' },
  ],
};

export const exemploLoteDeMovimentos = {
  movimentos: [
    { ...exemploMovimento, id: '4b6d8f0b-2d4f-4b6d-8f0b-2d4f6b8d0f19', saldo_antes: 12, saldo_depois: 10, criado_em: '2026-11-23T15:30:02.118Z', referencia_externa: 'MKT-2000004480', metadados: {} },
    {
      ...exemploMovimento, id: '5c7e9a1c-3e5a-4c7e-9a1c-3e5a7c9e1b2a', variacao_id: 'd9a5b3c4-7e6f-4a8b-8c1d-2e3f4a5b6c7d', quantidade: 1,
      saldo_antes: 6, saldo_depois: 5, criado_em: '2026-11-23T15:30:02.121Z', referencia_externa: 'MKT-2000004480', metadados: {},
    },
  ],
};

const { valor_centavos: _valor, ...pedidoSemValor } = exemploPedido;
export const exemploPedidoEstoque = {
  ...pedidoSemValor,
  id: '9a1c3e5a-7c9e-4b1d-8f3a-5c7e9a1c3e46',
  codigo: 'OP-000088',
  tipo: 'estoque',
  origem: 'api',
  cotacao_id: null,
  cliente_nome: null,
  prazo: '2026-12-05',
  prioridade: 'normal',
  situacao: 'aberto',
  pagamento_situacao: null,
  itens: [{ ...exemploPedido.itens[0], id: '2c4e6a8c-0e2a-4c4e-9a6c-8e0a2c4e6a57', tipo: 'catalogo', quantidade: 20, etapa: null }],
  referencia_externa: 'ERP-REP-0042',
};

const ENDPOINT_ERP = '9a1c3e5f-7b9d-4f1a-8c3e-5f7b9d1f3a62';

export const exemploEvento = {
  id: '1f3a5c7e-9b1d-4e3f-8a5c-7e9b1d3f5a73',
  tipo: 'cotacao.aprovada',
  versao: 'v1',
  criado_em: '2026-11-21T10:15:42.318Z',
  conta_id: CONTA,
  dados: { objeto: 'cotacao', id: exemploCotacao.id, codigo: exemploCotacao.codigo },
  url: `https://api.printfarm.example/v1/cotacoes/${exemploCotacao.id}`,
};

export const exemploTentativa = {
  entrega_id: '2a4c6e8a-0c2e-4a4c-9e6a-8c0e2a4c6e84',
  endpoint_id: ENDPOINT_ERP,
  endpoint_descricao: 'ERP da loja',
  tentativa: 2,
  iniciada_em: '2026-11-21T10:15:48.902Z',
  duracao_ms: 184,
  sucesso: true,
  status_http: 200,
  erro: null,
  resposta: '{"recebido":true}',
};

export const exemploReenvio = {
  evento_id: exemploEvento.id,
  entregas: [
    { id: exemploTentativa.entrega_id, endpoint_id: ENDPOINT_ERP, endpoint_descricao: 'ERP da loja', situacao: 'pendente', proxima_tentativa_em: '2026-11-23T14:05:09.112Z' },
  ],
  entregas_por_hora: { limite: 1000, usadas: 37 },
};

export const exemploPedidoDeRecuperacao = {
  desde: '2026-11-23T08:00:00-03:00',
  ate: '2026-11-23T11:30:00-03:00',
  endpoint_id: ENDPOINT_ERP,
  somente_falhas: true,
};

export const exemploRecuperacao = {
  simulacao: false,
  eventos: 42,
  entregas: 42,
  por_endpoint: [{ endpoint_id: ENDPOINT_ERP, entregas: 42 }],
  proximo_desde: null,
  entregas_por_hora: { limite: 1000, usadas: 37 },
};
