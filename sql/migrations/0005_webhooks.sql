-- Webhook endpoints, the event outbox, deliveries, every delivery attempt and the hourly delivery
-- counters; and the products a transaction changed, turned into catalog events at its commit.

-- The event types of contract §6.2. Part of the schema, not of sql/code: the CHECKs of
-- webhook_endpoints.tipos and outbox.tipo depend on it. A new type is a migration.
CREATE FUNCTION tipos_de_evento() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
  SELECT ARRAY[
    'cotacao.criada', 'cotacao.enviada', 'cotacao.fechamento_pedido', 'cotacao.status_mudou',
    'cotacao.aprovada', 'cotacao.recusada', 'link.aberto', 'pedido_producao.criado',
    'pedido_producao.situacao_mudou', 'pedido_producao.concluido', 'estoque.baixo',
    'estoque.movimentado', 'produto.criado', 'produto.atualizado', 'catalogo.atualizado_em_massa',
    'webhook.teste'
  ]::text[]
$$;

CREATE TABLE webhook_endpoints (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  url text NOT NULL CHECK (url ~ '^https?://' AND length(url) <= 2000),
  descricao text CHECK (length(descricao) <= 200),
  -- Empty means every type.
  tipos text[] NOT NULL DEFAULT '{}' CHECK (tipos <@ tipos_de_evento()),
  usuario_id uuid NOT NULL,
  ativo boolean NOT NULL DEFAULT true,
  desativado_em timestamptz,
  desativado_motivo text CHECK (desativado_motivo IN ('operador', 'recebedor_410', 'falhas_5_dias')),
  segredo text NOT NULL CHECK (segredo ~ '^whsec_[A-Za-z0-9+/=]{32,}$'),
  -- During a rotation the previous secret also signs, until segredo_anterior_ate.
  segredo_anterior text CHECK (segredo_anterior ~ '^whsec_[A-Za-z0-9+/=]{32,}$'),
  segredo_anterior_ate timestamptz,
  -- Start of the current run of failed deliveries; null after any success.
  falhando_desde timestamptz,
  criado_em timestamptz NOT NULL DEFAULT now(),
  atualizado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  FOREIGN KEY (conta_id, usuario_id) REFERENCES usuarios (conta_id, id),
  CHECK (ativo = (desativado_em IS NULL)),
  CHECK ((segredo_anterior IS NULL) = (segredo_anterior_ate IS NULL))
);
-- Every event, written in the same transaction as the change it reports. The worker relays rows
-- in seq order once available_at has passed (grouped events wait for the end of their window).
CREATE TABLE outbox (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  seq bigint GENERATED ALWAYS AS IDENTITY,
  tipo text NOT NULL CHECK (tipo = ANY (tipos_de_evento())),
  dados jsonb NOT NULL CHECK (jsonb_typeof(dados) = 'object' AND dados ? 'objeto'),
  -- Only for webhook.teste: the one endpoint it is for.
  endpoint_id uuid,
  -- Grouped types: one pending row per key, refreshed with the latest data until available_at.
  group_key text,
  available_at timestamptz NOT NULL DEFAULT now(),
  relayed_at timestamptz,
  criado_em timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, id),
  FOREIGN KEY (conta_id, endpoint_id) REFERENCES webhook_endpoints (conta_id, id) ON DELETE CASCADE,
  CHECK ((tipo = 'webhook.teste') = (endpoint_id IS NOT NULL))
);
CREATE INDEX outbox_pending ON outbox (available_at, seq) WHERE relayed_at IS NULL;
CREATE UNIQUE INDEX outbox_group_pending ON outbox (conta_id, group_key)
  WHERE relayed_at IS NULL AND group_key IS NOT NULL;
CREATE INDEX outbox_relayed ON outbox (relayed_at) WHERE relayed_at IS NOT NULL;

-- One delivery per event and endpoint. The schedule lives here (next_attempt_at), not in pg-boss:
-- operators, views and replays read and move it. job_id is the pg-boss job carrying the next attempt
-- while one is enqueued; a worker acts on a job only while it still matches (a fence against stale
-- or duplicated jobs).
CREATE TABLE deliveries (
  conta_id uuid NOT NULL,
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  event_id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'succeeded', 'failed')),
  -- Every attempt ever made (numbers delivery_attempts); run_attempts restarts at 0 on a replay and
  -- picks the next delay of the retry schedule.
  attempts int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  run_attempts int NOT NULL DEFAULT 0 CHECK (run_attempts >= 0),
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  job_id uuid,
  last_attempt_at timestamptz,
  -- Why the delivery ended without an attempt saying so (e.g. its endpoint was disabled).
  last_error text CHECK (length(last_error) <= 1000),
  created_at timestamptz NOT NULL DEFAULT now(),
  completed_at timestamptz,
  PRIMARY KEY (conta_id, id),
  UNIQUE (conta_id, event_id, endpoint_id),
  FOREIGN KEY (conta_id, event_id) REFERENCES outbox (conta_id, id) ON DELETE CASCADE,
  FOREIGN KEY (conta_id, endpoint_id) REFERENCES webhook_endpoints (conta_id, id) ON DELETE CASCADE,
  CHECK ((status = 'pending') = (completed_at IS NULL)),
  CHECK (status = 'pending' OR job_id IS NULL)
);
-- Due and not enqueued: what the worker's scheduler turns into jobs.
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending' AND job_id IS NULL;
-- Enqueued long ago: the maintenance job's search for lost jobs. The predicate names run_attempts,
-- which the per-delivery lookups of the hot path never constrain, so the planner can never pick
-- this index for them: its statistics lag behind a backlog, and scanning every queued delivery
-- to find one would then look cheap.
CREATE INDEX deliveries_enqueued ON deliveries (next_attempt_at)
  WHERE status = 'pending' AND job_id IS NOT NULL AND run_attempts >= 0;
CREATE INDEX deliveries_failed ON deliveries (completed_at) WHERE status = 'failed';
CREATE INDEX deliveries_endpoint ON deliveries (conta_id, endpoint_id, created_at);

-- One row per HTTP attempt, numbered from 1 within its delivery.
CREATE TABLE delivery_attempts (
  conta_id uuid NOT NULL,
  delivery_id uuid NOT NULL,
  attempt int NOT NULL CHECK (attempt >= 1),
  started_at timestamptz NOT NULL,
  duration_ms int NOT NULL CHECK (duration_ms >= 0),
  succeeded boolean NOT NULL,
  response_status int CHECK (response_status BETWEEN 100 AND 599),
  response_body text CHECK (octet_length(response_body) <= 4096),
  error text CHECK (length(error) <= 1000),
  PRIMARY KEY (conta_id, delivery_id, attempt),
  FOREIGN KEY (conta_id, delivery_id) REFERENCES deliveries (conta_id, id) ON DELETE CASCADE
);
CREATE INDEX delivery_attempts_started ON delivery_attempts (started_at);

-- Webhook deliveries per hour per account (contract §8.1, planos.entregas_webhook_por_hora). Every
-- HTTP request to a receiver counts, retries included; deliveries over the cap wait for the next
-- hour (UTC hours) and none is dropped.
CREATE TABLE webhook_uso_por_hora (
  conta_id uuid NOT NULL REFERENCES contas (id),
  hora timestamptz NOT NULL CHECK (hora = date_trunc('hour', hora, 'UTC')),
  entregas int NOT NULL DEFAULT 0 CHECK (entregas >= 0),
  PRIMARY KEY (conta_id, hora)
);

-- Products changed by the running transaction, collected by row triggers and turned into events
-- once, at commit, by a deferred trigger (sql/code/catalogo.sql): only then is it known whether the
-- transaction changed more than 20 products (one catalogo.atualizado_em_massa instead of
-- per-product events).
-- Rows live only inside their transaction.
CREATE TABLE catalogo_mudancas (
  conta_id uuid NOT NULL REFERENCES contas (id),
  transacao xid8 NOT NULL DEFAULT pg_current_xact_id(),
  produto_id uuid NOT NULL,
  -- The product was created by this transaction (produto.criado rather than produto.atualizado).
  criado boolean NOT NULL,
  PRIMARY KEY (conta_id, transacao, produto_id),
  FOREIGN KEY (conta_id, produto_id) REFERENCES produtos (conta_id, id) ON DELETE CASCADE
);
