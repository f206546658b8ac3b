-- Infrastructure: idempotency records, the request log and outgoing e-mail.

-- Contract §4.2 rules 2-5: per API key, the body hash, the status and the created id (never the
-- body or the response). A row with state in_progress is a request still running; its lease lets
-- a later request take it over when the process that held it died.
CREATE TABLE idempotency_keys (
  conta_id uuid NOT NULL,
  chave_id uuid NOT NULL,
  key text NOT NULL CHECK (length(key) BETWEEN 1 AND 64),
  route text NOT NULL,
  request_hash bytea NOT NULL CHECK (length(request_hash) = 32),
  state text NOT NULL DEFAULT 'in_progress' CHECK (state IN ('in_progress', 'completed')),
  lease_until timestamptz,
  status_code int CHECK (status_code BETWEEN 200 AND 499),
  resource_id uuid,
  codigo text,
  motivo text,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL DEFAULT now() + interval '24 hours',
  PRIMARY KEY (conta_id, chave_id, key),
  FOREIGN KEY (conta_id, chave_id) REFERENCES chaves_api (conta_id, id) ON DELETE CASCADE,
  CHECK ((state = 'completed') = (status_code IS NOT NULL)),
  CHECK ((state = 'in_progress') = (lease_until IS NOT NULL))
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

-- Wakes the worker's mailer at once instead of at its next poll.
CREATE FUNCTION outgoing_emails_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outgoing_email', '');
  RETURN NULL;
END $$;
CREATE TRIGGER outgoing_emails_notify AFTER INSERT ON outgoing_emails
  FOR EACH STATEMENT EXECUTE FUNCTION outgoing_emails_notify();

-- Claims an Idempotency-Key for a request in one round trip (api/idempotency.ts): a new or
-- abandoned key is taken (state in_progress with a lease); otherwise the existing record is
-- returned for the caller to replay, refuse as a conflict, or answer 409.
-- The claim commits without waiting for the WAL flush: if a crash lost it, the change it guards
-- never happened either (that change's own durable commit would have flushed the claim first).
CREATE FUNCTION api_idempotency_start(
  p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea, p_lease_seconds int
) RETURNS TABLE (claimed boolean, route text, request_hash bytea, state text, status_code int,
                 resource_id uuid, codigo text, motivo text)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  RETURN QUERY
  INSERT INTO idempotency_keys AS k (conta_id, chave_id, key, route, request_hash, lease_until)
  VALUES (p_conta_id, p_chave_id, p_key, p_route, p_hash, now() + make_interval(secs => p_lease_seconds))
  ON CONFLICT (conta_id, chave_id, key) DO UPDATE
     SET route = excluded.route, request_hash = excluded.request_hash, state = 'in_progress',
         lease_until = excluded.lease_until, status_code = NULL, resource_id = NULL, codigo = NULL, motivo = NULL,
         created_at = now(), expires_at = now() + interval '24 hours'
   WHERE k.expires_at <= now()
      OR (k.state = 'in_progress' AND k.lease_until < now()
          AND k.request_hash = excluded.request_hash AND k.route = excluded.route)
  RETURNING true, k.route, k.request_hash, k.state, k.status_code, k.resource_id, k.codigo, k.motivo;
  IF FOUND THEN
    RETURN;
  END IF;
  RETURN QUERY
  SELECT false, k.route, k.request_hash, k.state, k.status_code, k.resource_id, k.codigo, k.motivo
    FROM idempotency_keys k
   WHERE k.conta_id = p_conta_id AND k.chave_id = p_chave_id AND k.key = p_key;
END $$;
