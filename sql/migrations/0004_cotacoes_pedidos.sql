-- Quotations and production orders, with their items and stages. The state machines
-- (docs/decisions/0029-quotation-and-order-states.md) are enforced by triggers (sql/code/cotacoes.sql, pedidos.sql): a transition the design does not
-- allow cannot be written by any path.

CREATE TABLE cotacoes (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  numero int NOT NULL CHECK (numero > 0),
  codigo text NOT NULL GENERATED ALWAYS AS ('COT-' || lpad(numero::text, 6, '0')) STORED,
  status text NOT NULL DEFAULT 'rascunho'
    CHECK (status IN ('rascunho', 'enviada', 'aprovada', 'recusada', 'cancelada', 'expirada')),
  versao int NOT NULL DEFAULT 1 CHECK (versao >= 1),
  cliente_nome text CHECK (length(cliente_nome) BETWEEN 1 AND 200),
  cliente_email text CHECK (length(cliente_email) <= 254),
  canal_id uuid,
  validade date,
  observacao text CHECK (length(observacao) <= 2000),
  valor_total_centavos bigint NOT NULL DEFAULT 0 CHECK (valor_total_centavos BETWEEN 0 AND 100000000000),
  enviada_em timestamptz,
  link_token text NOT NULL DEFAULT translate(encode(uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()), 'base64'), '+/=', '-_'),
  link_aberturas int NOT NULL DEFAULT 0 CHECK (link_aberturas >= 0),
  anonimizada_em timestamptz,
  row_version bigint NOT NULL DEFAULT 1,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, numero),
  FOREIGN KEY (conta_id, canal_id) REFERENCES canais (conta_id, id),
  CHECK (anonimizada_em IS NULL OR (cliente_nome IS NULL AND cliente_email IS NULL))
);
CREATE UNIQUE INDEX cotacoes_link_token ON cotacoes (link_token);
CREATE INDEX cotacoes_atualizado ON cotacoes (conta_id, atualizado_em, id);
CREATE INDEX cotacoes_criado ON cotacoes (conta_id, criado_em, id);
CREATE INDEX cotacoes_validade ON cotacoes (validade) WHERE status = 'enviada';

CREATE TABLE cotacao_itens (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  cotacao_id uuid NOT NULL,
  posicao int NOT NULL CHECK (posicao >= 0),
  tipo text NOT NULL CHECK (tipo IN ('catalogo', 'avulso')),
  produto_id uuid,
  variacao_id uuid,
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  quantidade int NOT NULL CHECK (quantidade BETWEEN 1 AND 99999),
  preco_unitario_centavos bigint NOT NULL CHECK (preco_unitario_centavos BETWEEN 0 AND 100000000000),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, cotacao_id, id),
  UNIQUE (conta_id, cotacao_id, posicao),
  FOREIGN KEY (conta_id, cotacao_id) REFERENCES cotacoes (conta_id, id) ON DELETE CASCADE,
  FOREIGN KEY (conta_id, produto_id, variacao_id) REFERENCES variacoes (conta_id, produto_id, id),
  CHECK ((tipo = 'catalogo') = (variacao_id IS NOT NULL AND produto_id IS NOT NULL)),
  CHECK (tipo = 'catalogo' OR produto_id IS NULL)
);

-- Stages an item goes through in the workshop (slicing, printing, finishing...), per account.
CREATE TABLE etapas (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 100),
  ordem int NOT NULL CHECK (ordem >= 0),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, nome)
);

CREATE TABLE pedidos_producao (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  numero int NOT NULL CHECK (numero > 0),
  codigo text NOT NULL GENERATED ALWAYS AS ('OP-' || lpad(numero::text, 6, '0')) STORED,
  tipo text NOT NULL CHECK (tipo IN ('cliente', 'estoque')),
  origem text NOT NULL CHECK (origem IN ('cotacao', 'manual', 'repor', 'api')),
  cotacao_id uuid,
  cliente_nome text CHECK (length(cliente_nome) BETWEEN 1 AND 200),
  prazo date,
  prioridade text NOT NULL DEFAULT 'normal' CHECK (prioridade IN ('normal', 'urgente')),
  situacao text NOT NULL DEFAULT 'aberto' CHECK (situacao IN ('aberto', 'em_producao', 'finalizado', 'cancelado')),
  pagamento_situacao text CHECK (pagamento_situacao IN ('nao_pago', 'sinal_pago', 'pago')),
  valor_centavos bigint CHECK (valor_centavos BETWEEN 0 AND 100000000000),
  observacao text CHECK (length(observacao) <= 2000),
  anonimizado_em timestamptz,
  finalizado_em timestamptz,
  row_version bigint NOT NULL DEFAULT 1,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, numero),
  FOREIGN KEY (conta_id, cotacao_id) REFERENCES cotacoes (conta_id, id),
  CHECK (tipo = 'cliente' OR (cliente_nome IS NULL AND pagamento_situacao IS NULL AND valor_centavos IS NULL)),
  CHECK (tipo = 'estoque' OR pagamento_situacao IS NOT NULL),
  -- Converting a quotation on the screen (origem cotacao) always names it; an order created
  -- through the API may name an approved quotation too; manual and stock refills never do.
  CHECK (origem <> 'cotacao' OR cotacao_id IS NOT NULL),
  CHECK (origem IN ('cotacao', 'api') OR cotacao_id IS NULL),
  CHECK ((situacao = 'finalizado') = (finalizado_em IS NOT NULL)),
  CHECK (anonimizado_em IS NULL OR cliente_nome IS NULL)
);
CREATE INDEX pedidos_producao_atualizado ON pedidos_producao (conta_id, atualizado_em, id);
CREATE INDEX pedidos_producao_criado ON pedidos_producao (conta_id, criado_em, id);
CREATE INDEX pedidos_producao_cotacao ON pedidos_producao (conta_id, cotacao_id) WHERE cotacao_id IS NOT NULL;

CREATE TABLE pedido_itens (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  pedido_id uuid NOT NULL,
  posicao int NOT NULL CHECK (posicao >= 0),
  tipo text NOT NULL CHECK (tipo IN ('catalogo', 'cotacao', 'avulso')),
  produto_id uuid,
  variacao_id uuid,
  cotacao_id uuid,
  cotacao_item_id uuid,
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  quantidade int NOT NULL CHECK (quantidade BETWEEN 1 AND 99999),
  situacao text NOT NULL DEFAULT 'ativo' CHECK (situacao IN ('ativo', 'finalizado', 'retirado')),
  etapa_id uuid,
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, pedido_id, posicao),
  FOREIGN KEY (conta_id, pedido_id) REFERENCES pedidos_producao (conta_id, id) ON DELETE CASCADE,
  FOREIGN KEY (conta_id, produto_id, variacao_id) REFERENCES variacoes (conta_id, produto_id, id),
  FOREIGN KEY (conta_id, cotacao_id, cotacao_item_id) REFERENCES cotacao_itens (conta_id, cotacao_id, id),
  FOREIGN KEY (conta_id, etapa_id) REFERENCES etapas (conta_id, id),
  CHECK (tipo <> 'catalogo' OR (variacao_id IS NOT NULL AND produto_id IS NOT NULL)),
  CHECK ((tipo = 'cotacao') = (cotacao_item_id IS NOT NULL)),
  CHECK (tipo <> 'avulso' OR (produto_id IS NULL AND variacao_id IS NULL))
);
CREATE INDEX pedido_itens_etapa ON pedido_itens (conta_id, etapa_id) WHERE etapa_id IS NOT NULL;

-- The customer asking, on the quotation link, to close the deal on the version they saw. A row
-- per request (at most one per version), so a plain INSERT by the application emits
-- cotacao.fechamento_pedido like any other change.
CREATE TABLE cotacao_fechamentos (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  cotacao_id uuid NOT NULL,
  versao int NOT NULL CHECK (versao >= 1),
  cor_a_combinar boolean NOT NULL DEFAULT false,
  criado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, cotacao_id, versao),
  FOREIGN KEY (conta_id, cotacao_id) REFERENCES cotacoes (conta_id, id) ON DELETE CASCADE
);
