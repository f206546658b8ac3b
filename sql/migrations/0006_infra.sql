-- Infrastructure: idempotency records, the request log and outgoing e-mail.

-- Contract §4.2 rules 2-5: per API key, the body hash, the status and the created id (never the
-- body or the response). A row is written when the request ends: with the change it guards, in the
-- same transaction, or alone for a business refusal. A request still running holds a
-- transaction-scoped advisory lock on its key instead of a row, so a process that dies leaves
-- nothing to clean up: its transaction ends and the key is free.
CREATE TABLE idempotency_keys (
  conta_id uuid NOT NULL,
  chave_id uuid NOT NULL,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 64),
  route text NOT NULL,
  request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
  status_code int NOT NULL CHECK (status_code BETWEEN 200 AND 499),
  resource_id uuid,
  codigo text,
  motivo text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL DEFAULT now() + interval '24 hours',
  PRIMARY KEY (conta_id, chave_id, key),
  FOREIGN KEY (conta_id, chave_id) REFERENCES chaves_api (conta_id, id) ON DELETE CASCADE
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- One row per request, written in batches off the request path. Requests refused before an
-- account is known (401) have no conta_id.
CREATE TABLE request_log (
  requisicao_id uuid PRIMARY KEY,
  conta_id uuid,
  chave_id uuid,
  method text NOT NULL,
  route text,
  path text NOT NULL,
  status int NOT NULL CHECK (status BETWEEN 100 AND 599),
  codigo text,
  cost int NOT NULL DEFAULT 0 CHECK (cost >= 0),
  duration_ms real NOT NULL CHECK (duration_ms >= 0),
  ip text,
  created_at timestamptz NOT NULL
);
CREATE INDEX request_log_created ON request_log (created_at);
CREATE INDEX request_log_conta ON request_log (conta_id, created_at) WHERE conta_id IS NOT NULL;

-- Every message the service sends; the worker delivers pending rows over SMTP.
CREATE TABLE outgoing_emails (
  id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
  conta_id uuid REFERENCES contas (id),
  kind text NOT NULL,
  to_address text NOT NULL CHECK (to_address ~ '^[^@[:space:]]+@[^@[:space:]]+$'),
  subject text NOT NULL CHECK (length(subject) BETWEEN 1 AND 300),
  body text NOT NULL,
  status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'sent', 'failed', 'skipped')),
  attempts int NOT NULL DEFAULT 0 CHECK (attempts >= 0),
  last_error text,
  next_attempt_at timestamptz NOT NULL DEFAULT now(),
  -- A worker holding the row until then; another may take it after (the first one died).
  locked_until timestamptz,
  created_at timestamptz NOT NULL DEFAULT now(),
  sent_at timestamptz
);
CREATE INDEX outgoing_emails_pending ON outgoing_emails (next_attempt_at) WHERE status = 'pending';

-- How a write claimed its Idempotency-Key (api_write_claim(), sql/code/idempotency.sql; route and
-- body hash are compared there, so the hash never travels back): new, running (409), conflito (422)
-- or done (replay the record).
CREATE TYPE api_write_claim AS (
  claim text,
  status_code int,
  resource_id uuid,
  codigo text,
  motivo text
);
