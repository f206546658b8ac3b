-- Stock: locations, finished-part balances and their movements; supplies and theirs.

CREATE TABLE locais (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 100),
  tipo text NOT NULL CHECK (tipo IN ('proprio', 'consignado')),
  criado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id)
);
-- Each account has exactly one own location; consignment locations are any number.
CREATE UNIQUE INDEX locais_um_proprio ON locais (conta_id) WHERE tipo = 'proprio';

CREATE TABLE estoque_saldos (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  local_id uuid NOT NULL,
  produto_id uuid NOT NULL,
  variacao_id uuid NOT NULL,
  parte_id uuid,
  saldo int NOT NULL DEFAULT 0 CHECK (saldo >= 0),
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE NULLS NOT DISTINCT (conta_id, local_id, variacao_id, parte_id),
  FOREIGN KEY (conta_id, local_id) REFERENCES locais (conta_id, id),
  FOREIGN KEY (conta_id, produto_id, variacao_id) REFERENCES variacoes (conta_id, produto_id, id),
  FOREIGN KEY (conta_id, variacao_id, parte_id) REFERENCES partes (conta_id, variacao_id, id)
)
-- A movement changes only saldo and atualizado_em, neither indexed, so with room left on the page
-- the update is HOT: no index is touched on the hottest write of the service.
WITH (fillfactor = 80);
CREATE INDEX estoque_saldos_variacao ON estoque_saldos (conta_id, variacao_id);
CREATE INDEX estoque_saldos_produto ON estoque_saldos (conta_id, produto_id);

CREATE TABLE estoque_movimentos (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  local_id uuid NOT NULL,
  variacao_id uuid NOT NULL,
  parte_id uuid,
  tipo text NOT NULL CHECK (tipo IN ('entrada', 'saida', 'ajuste')),
  -- entrada and saida carry the quantity posted; ajuste the signed difference to the count.
  quantidade int NOT NULL,
  saldo_antes int NOT NULL CHECK (saldo_antes >= 0),
  saldo_depois int NOT NULL CHECK (saldo_depois >= 0),
  motivo text NOT NULL CHECK (motivo IN ('venda_loja', 'venda_marketplace', 'perda', 'devolucao', 'correcao', 'outro')),
  observacao text CHECK (length(observacao) <= 200),
  via text NOT NULL DEFAULT 'tela' CHECK (via IN ('api', 'tela', 'link', 'rotina')),
  chave_id uuid,
  criado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  FOREIGN KEY (conta_id, local_id) REFERENCES locais (conta_id, id),
  FOREIGN KEY (conta_id, variacao_id) REFERENCES variacoes (conta_id, id),
  FOREIGN KEY (conta_id, variacao_id, parte_id) REFERENCES partes (conta_id, variacao_id, id),
  FOREIGN KEY (conta_id, chave_id) REFERENCES chaves_api (conta_id, id),
  CHECK (tipo = 'ajuste' OR quantidade BETWEEN 1 AND 99999),
  CHECK (saldo_depois = saldo_antes + CASE WHEN tipo = 'saida' THEN -quantidade ELSE quantidade END)
);
CREATE INDEX estoque_movimentos_variacao ON estoque_movimentos (conta_id, variacao_id, criado_em);

-- Supplies: a material color (insumo.id is then the color's id), a component or packaging.
CREATE TABLE insumos (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  tipo text NOT NULL CHECK (tipo IN ('material_cor', 'componente', 'embalagem')),
  cor_id uuid,
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  unidade text NOT NULL CHECK (unidade IN ('g', 'ml', 'un')),
  saldo int NOT NULL DEFAULT 0 CHECK (saldo >= 0),
  minimo int NOT NULL DEFAULT 0 CHECK (minimo >= 0),
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  FOREIGN KEY (conta_id, cor_id) REFERENCES cores (conta_id, id) ON DELETE CASCADE,
  CHECK ((tipo = 'material_cor') = (cor_id IS NOT NULL)),
  CHECK (cor_id IS NULL OR cor_id = id)
);
CREATE INDEX insumos_abaixo ON insumos (conta_id, id) WHERE saldo < minimo;
CREATE INDEX insumos_atualizado ON insumos (conta_id, atualizado_em, id);

CREATE TABLE insumo_movimentos (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  insumo_id uuid NOT NULL,
  quantidade int NOT NULL CHECK (quantidade <> 0),
  saldo_depois int NOT NULL CHECK (saldo_depois >= 0),
  motivo text NOT NULL CHECK (motivo IN ('compra', 'consumo', 'perda', 'correcao')),
  via text NOT NULL DEFAULT 'tela' CHECK (via IN ('api', 'tela', 'link', 'rotina')),
  criado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  FOREIGN KEY (conta_id, insumo_id) REFERENCES insumos (conta_id, id) ON DELETE CASCADE
);

-- estoque.baixo: the last warning per supply. A new warning goes out only when the last one was on
-- an earlier calendar day in the account's time zone; the upsert's row lock makes two concurrent
-- transactions agree on which of them warns.
CREATE TABLE insumo_avisos (
  conta_id uuid NOT NULL,
  insumo_id uuid NOT NULL,
  avisado_em timestamptz NOT NULL,
  PRIMARY KEY (conta_id, insumo_id),
  FOREIGN KEY (conta_id, insumo_id) REFERENCES insumos (conta_id, id) ON DELETE CASCADE
);

-- The default order of each list (criado_em, id), and GET /estoque's filter by location.
CREATE INDEX estoque_saldos_criado ON estoque_saldos (conta_id, criado_em, id);
CREATE INDEX insumos_criado ON insumos (conta_id, criado_em, id);
CREATE INDEX estoque_saldos_local ON estoque_saldos (conta_id, local_id);

-- A stock movement as estoque_movimentar() (sql/code/estoque.sql) answers it: made, or refused
-- with the 422 motivo and nothing written.
CREATE TYPE estoque_movimento AS (
  recusa text,           -- NULL when the movement was made; else referencia_invalida, abaixo_do_minimo,
                         -- fora_do_multiplo or saldo_insuficiente
  limite int,            -- with a refusal of the quantity: the minimum, the multiple or the balance
                         -- it did not respect
  id uuid,
  tipo text,
  variacao_id uuid,
  parte_id uuid,
  local_id uuid,
  quantidade int,
  saldo_antes int,
  saldo_depois int,
  motivo text,
  observacao text,
  criado_em timestamptz
);
