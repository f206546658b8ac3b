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

-- Wakes the worker's mailer at once instead of at its next poll.
CREATE FUNCTION outgoing_emails_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('outgoing_email', '');
  RETURN NULL;
END $$;
CREATE TRIGGER outgoing_emails_notify AFTER INSERT ON outgoing_emails
  FOR EACH STATEMENT EXECUTE FUNCTION outgoing_emails_notify();

-- The first statement of a POST's transaction (api/pipeline.ts): declares who makes the change
-- (app.via, app.chave_id: the triggers' origem) and, with an Idempotency-Key, takes the key's lock
-- without waiting and reads what an earlier request with it left. outcome: new (go on), running
-- (another request holds the key: 409), or done (the record: replay it, or 422 for another body).
CREATE FUNCTION api_write_begin(p_conta_id uuid, p_chave_id uuid, p_key text)
RETURNS TABLE (outcome text, route text, request_hash bytea, status_code int, resource_id uuid, codigo text, motivo text)
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM set_config('app.via', 'api', true), set_config('app.chave_id', p_chave_id::text, true);
  IF p_key IS NULL THEN
    RETURN QUERY SELECT 'new', NULL::text, NULL::bytea, NULL::int, NULL::uuid, NULL::text, NULL::text;
    RETURN;
  END IF;
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_conta_id::text || p_chave_id::text || p_key, 7410204)) THEN
    RETURN QUERY SELECT 'running', NULL::text, NULL::bytea, NULL::int, NULL::uuid, NULL::text, NULL::text;
    RETURN;
  END IF;
  -- A statement of its own: its snapshot is taken after the lock, so it sees what the previous
  -- holder committed.
  RETURN QUERY
  SELECT 'done', k.route, k.request_hash, k.status_code, k.resource_id, k.codigo, k.motivo
    FROM idempotency_keys k
   WHERE k.conta_id = p_conta_id AND k.chave_id = p_chave_id AND k.key = p_key AND k.expires_at > now();
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'new', NULL::text, NULL::bytea, NULL::int, NULL::uuid, NULL::text, NULL::text;
  END IF;
END $$;

-- Keeps how a request with an Idempotency-Key ended; an expired record of the key is replaced.
CREATE FUNCTION api_idempotency_record(
  p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea, p_status int, p_resource_id uuid,
  p_codigo text, p_motivo text
) RETURNS void
LANGUAGE sql AS $$
  INSERT INTO idempotency_keys AS k (conta_id, chave_id, key, route, request_hash, status_code, resource_id, codigo, motivo)
  VALUES (p_conta_id, p_chave_id, p_key, p_route, p_hash, p_status, p_resource_id, p_codigo, p_motivo)
  ON CONFLICT (conta_id, chave_id, key) DO UPDATE
     SET route = excluded.route, request_hash = excluded.request_hash, status_code = excluded.status_code,
         resource_id = excluded.resource_id, codigo = excluded.codigo, motivo = excluded.motivo,
         created_at = now(), expires_at = now() + interval '24 hours'
   WHERE k.expires_at <= now()
$$;
