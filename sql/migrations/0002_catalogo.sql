-- Catalog: sales channels, products with variations, parts and prices per channel with quantity
-- tiers; materials and their colors.

CREATE TABLE canais (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 100),
  tipo text NOT NULL CHECK (tipo IN ('loja_propria', 'marketplace', 'atacado', 'outro')),
  taxa_percentual_bps int NOT NULL DEFAULT 0 CHECK (taxa_percentual_bps BETWEEN 0 AND 10000),
  ativo boolean NOT NULL DEFAULT true,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id)
);
CREATE INDEX canais_atualizado ON canais (conta_id, atualizado_em, id);

CREATE TABLE produtos (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  sku text NOT NULL CHECK (sku ~ '^[A-Za-z0-9._-]{1,64}$'),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  descricao text CHECK (length(descricao) <= 5000),
  ativo boolean NOT NULL DEFAULT true,
  row_version bigint NOT NULL DEFAULT 1,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, sku)
);
CREATE INDEX produtos_atualizado ON produtos (conta_id, atualizado_em, id);

CREATE TABLE variacoes (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  produto_id uuid NOT NULL,
  sku text NOT NULL CHECK (sku ~ '^[A-Za-z0-9._-]{1,64}$'),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  ativa boolean NOT NULL DEFAULT true,
  quantidade_minima int NOT NULL DEFAULT 1 CHECK (quantidade_minima BETWEEN 1 AND 99999),
  multiplo int NOT NULL DEFAULT 1 CHECK (multiplo BETWEEN 1 AND 99999),
  posicao int NOT NULL DEFAULT 0,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, sku),
  UNIQUE (conta_id, produto_id, id),
  FOREIGN KEY (conta_id, produto_id) REFERENCES produtos (conta_id, id) ON DELETE CASCADE
);

-- Parts of a variation printed separately (a body and a lid); stock may be kept per part.
CREATE TABLE partes (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  variacao_id uuid NOT NULL,
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  quantidade int NOT NULL DEFAULT 1 CHECK (quantidade BETWEEN 1 AND 9999),
  posicao int NOT NULL DEFAULT 0,
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, variacao_id, id),
  FOREIGN KEY (conta_id, variacao_id) REFERENCES variacoes (conta_id, id) ON DELETE CASCADE
);

-- Price tiers of a variation on a channel: from a_partir_de units on, each unit costs preco_centavos.
CREATE TABLE precos (
  conta_id uuid NOT NULL,
  variacao_id uuid NOT NULL,
  canal_id uuid NOT NULL,
  a_partir_de int NOT NULL CHECK (a_partir_de BETWEEN 1 AND 99999),
  preco_centavos bigint NOT NULL CHECK (preco_centavos BETWEEN 0 AND 100000000000),
  PRIMARY KEY (conta_id, variacao_id, canal_id, a_partir_de),
  FOREIGN KEY (conta_id, variacao_id) REFERENCES variacoes (conta_id, id) ON DELETE CASCADE,
  FOREIGN KEY (conta_id, canal_id) REFERENCES canais (conta_id, id) ON DELETE CASCADE
);
CREATE INDEX precos_canal ON precos (conta_id, canal_id);

CREATE TABLE materiais (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 100),
  tipo text NOT NULL CHECK (tipo IN ('filamento', 'resina')),
  custo_por_kg_centavos bigint NOT NULL DEFAULT 0 CHECK (custo_por_kg_centavos BETWEEN 0 AND 100000000000),
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, nome)
);
CREATE INDEX materiais_atualizado ON materiais (conta_id, atualizado_em, id);

-- A color of a material: the "material_cor" a supply balance refers to.
CREATE TABLE cores (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  material_id uuid NOT NULL,
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 100),
  hex text NOT NULL CHECK (hex ~ '^#[0-9A-Fa-f]{6}$'),
  ativa boolean NOT NULL DEFAULT true,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, material_id, nome),
  FOREIGN KEY (conta_id, material_id) REFERENCES materiais (conta_id, id) ON DELETE CASCADE
);

-- The default order of each list (criado_em, id): a page is an index range scan.
CREATE INDEX canais_criado ON canais (conta_id, criado_em, id);
CREATE INDEX produtos_criado ON produtos (conta_id, criado_em, id);
CREATE INDEX materiais_criado ON materiais (conta_id, criado_em, id);
