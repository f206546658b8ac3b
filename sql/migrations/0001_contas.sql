-- Plans, accounts, users with permissions, API keys, and the platform switch.
-- Every table of the service carries conta_id and every foreign key between account data includes
-- it, so rows of two accounts can never reference each other (and the schema can be distributed by
-- conta_id later without changing queries).
--
-- The baseline of the schema (issue 16): the numbered chain of the first development months,
-- squashed once into one migration per module. Functions, views and triggers live in sql/code/.

-- A CHECK may only call immutable functions; time-zone validity only changes with the tz database.
-- Part of the schema, not of sql/code: contas' CHECK depends on it, and the release rebuilds code
-- without touching tables.
CREATE FUNCTION fuso_horario_valido(tz text) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  PERFORM now() AT TIME ZONE tz;
  RETURN true;
EXCEPTION WHEN invalid_parameter_value THEN
  RETURN false;
END $$;

CREATE TABLE platform (
  id boolean PRIMARY KEY DEFAULT true CHECK (id),
  api_enabled boolean NOT NULL DEFAULT true,
  api_disabled_reason text
);
INSERT INTO platform DEFAULT VALUES;
COMMENT ON TABLE platform IS 'One row of platform-wide switches: api_enabled = false answers every request with 503 indisponivel.';

-- Every ceiling of contract §8.1, as data: operators change them with UPDATE.
CREATE TABLE planos (
  id text PRIMARY KEY CHECK (id ~ '^[a-z][a-z0-9_]{1,29}$'),
  nome text NOT NULL,
  api_disponivel boolean NOT NULL DEFAULT true,
  chaves_ativas int NOT NULL CHECK (chaves_ativas >= 0),
  webhook_endpoints int NOT NULL CHECK (webhook_endpoints >= 0),
  leituras_por_minuto int NOT NULL CHECK (leituras_por_minuto > 0),
  escritas_por_minuto int NOT NULL CHECK (escritas_por_minuto > 0),
  chamadas_por_mes int NOT NULL CHECK (chamadas_por_mes > 0),
  rajada int NOT NULL CHECK (rajada > 0),
  rajada_recarga_por_segundo int NOT NULL CHECK (rajada_recarga_por_segundo > 0),
  simultaneas_por_chave int NOT NULL CHECK (simultaneas_por_chave > 0),
  simultaneas_por_conta int NOT NULL CHECK (simultaneas_por_conta > 0),
  entregas_webhook_por_hora int NOT NULL CHECK (entregas_webhook_por_hora > 0)
);

INSERT INTO planos (id, nome, chaves_ativas, webhook_endpoints, leituras_por_minuto, escritas_por_minuto,
                    chamadas_por_mes, rajada, rajada_recarga_por_segundo, simultaneas_por_chave,
                    simultaneas_por_conta, entregas_webhook_por_hora)
VALUES ('bancada', 'Bancada', 2, 1, 30, 10, 50000, 5, 1, 2, 3, 300),
       ('oficina', 'Oficina', 3, 3, 60, 20, 150000, 10, 2, 3, 3, 1000),
       ('farm', 'Farm', 10, 10, 180, 60, 750000, 20, 5, 3, 3, 5000);

CREATE TABLE contas (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  plano_id text NOT NULL REFERENCES planos (id),
  bloqueada boolean NOT NULL DEFAULT false,
  api_ativa boolean NOT NULL DEFAULT true,
  fuso_horario text NOT NULL DEFAULT 'America/Sao_Paulo' CHECK (fuso_horario_valido(fuso_horario)),
  ultimo_numero_cotacao int NOT NULL DEFAULT 0 CHECK (ultimo_numero_cotacao >= 0),
  ultimo_numero_pedido int NOT NULL DEFAULT 0 CHECK (ultimo_numero_pedido >= 0),
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now()
);
COMMENT ON COLUMN contas.api_ativa IS 'The account''s API module; false answers 403 escopo_insuficiente.';

CREATE TABLE usuarios (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 200),
  email text NOT NULL CHECK (email ~ '^[^@[:space:]]+@[^@[:space:]]+$' AND length(email) <= 254),
  permissoes text[] NOT NULL DEFAULT '{}' CHECK (permissoes <@ ARRAY[
    'produtos.ver', 'estoque_produtos.ver', 'estoque_produtos.movimentar', 'estoque_insumos.ver',
    'cotacoes.ver', 'cotacoes.editar', 'producao.ver', 'producao.editar', 'custos.ver'
  ]::text[]),
  ativo boolean NOT NULL DEFAULT true,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, email)
);

CREATE TABLE chaves_api (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  usuario_id uuid NOT NULL,
  nome text NOT NULL CHECK (length(nome) BETWEEN 1 AND 100),
  prefixo text NOT NULL CHECK (prefixo ~ '^[A-Za-z0-9]{8}$'),
  token_hash bytea NOT NULL CHECK (length(token_hash) = 32),
  escopos text[] NOT NULL CHECK (escopos <@ ARRAY[
    'catalogo:ler', 'estoque:ler', 'estoque:escrever', 'cotacoes:ler', 'cotacoes:escrever',
    'pedidos:ler', 'pedidos:escrever'
  ]::text[]),
  criada_em timestamptz NOT NULL DEFAULT now(),
  expira_em timestamptz CHECK (expira_em > criada_em),
  revogada_em timestamptz,
  suspensa_ate timestamptz,
  recusas_consecutivas int NOT NULL DEFAULT 0 CHECK (recusas_consecutivas >= 0),
  ultimo_uso_em timestamptz,
  PRIMARY KEY (conta_id, id),
  FOREIGN KEY (conta_id, usuario_id) REFERENCES usuarios (conta_id, id)
);
-- Lookup by the hash of the presented token: the one query that is not scoped by conta_id.
CREATE UNIQUE INDEX chaves_api_token_hash ON chaves_api (token_hash);
CREATE UNIQUE INDEX chaves_api_prefixo ON chaves_api (prefixo);
COMMENT ON COLUMN chaves_api.token_hash IS 'SHA-256 of the whole token; the token itself is never stored.';
