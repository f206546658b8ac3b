-- Idempotency-Key (contract §4.2 rules 2-5; docs/decisions/0008-idempotency-key-on-every-post.md):
-- how a write claims its key in the first statement of its transaction, and how the outcome is kept
-- with the change.

-- p_traceparent: the request's trace context, for the events the change emits (NULL: not traced).
CREATE FUNCTION api_write_claim(p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea, p_traceparent text DEFAULT NULL)
RETURNS api_write_claim
LANGUAGE plpgsql
-- The record's lookup is by its primary key: an index lookup whatever the statistics say. A plan is
-- made once per connection; made while the table was empty it was a sequential scan, kept while the
-- table grew until the next ANALYZE, reading the whole table at every claim. Without
-- sequential scans, and with the expiry in its WHERE, it read the expiry index instead: every live
-- key of every account. The lookup names the primary key's columns only; the expiry is checked after.
SET enable_seqscan = off
AS $$
DECLARE
  c api_write_claim;
  k record;
BEGIN
  -- Who makes the change, for the triggers.
  PERFORM set_config('app.via', 'api', true), set_config('app.chave_id', p_chave_id::text, true);
  IF p_traceparent IS NOT NULL THEN
    PERFORM set_config('app.traceparent', p_traceparent, true);
  END IF;
  c.claim := 'new';
  IF p_key IS NULL THEN
    RETURN c;
  END IF;
  IF NOT pg_try_advisory_xact_lock(hashtextextended(p_conta_id::text || p_chave_id::text || p_key, 7410204)) THEN
    c.claim := 'running';
    RETURN c;
  END IF;
  -- A statement of its own: its snapshot is taken after the lock, so it sees what the previous
  -- holder committed.
  SELECT i.route, i.request_hash, i.status_code, i.resource_id, i.codigo, i.motivo, i.refusals, i.expires_at INTO k
    FROM idempotency_keys i
   WHERE i.conta_id = p_conta_id AND i.chave_id = p_chave_id AND i.key = p_key;
  IF FOUND AND k.expires_at > now() THEN
    IF k.route IS DISTINCT FROM p_route OR k.request_hash IS DISTINCT FROM p_hash THEN
      c.claim := 'conflito';
    ELSE
      c.claim := 'done';
      c.status_code := k.status_code;
      c.resource_id := k.resource_id;
      c.codigo := k.codigo;
      c.motivo := k.motivo;
      c.refusals := k.refusals;
    END IF;
  END IF;
  RETURN c;
END $$;

-- Keeps how requests with an Idempotency-Key ended, one statement for a batch of them (one each:
-- a key twice would fail the statement); an expired record of a key is replaced.
-- p_refusals: the refused items of a refused batch of movements ([{indice, motivo, mensagem}]), the
-- body's recusas.
CREATE FUNCTION api_idempotency_records(
  p_contas uuid[], p_chaves uuid[], p_keys text[], p_routes text[], p_hashes bytea[], p_status int[], p_resources uuid[],
  p_codigos text[], p_motivos text[], p_refusals jsonb[] DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO idempotency_keys AS k (conta_id, chave_id, key, route, request_hash, status_code, resource_id, codigo, motivo, refusals)
  SELECT * FROM unnest(p_contas, p_chaves, p_keys, p_routes, p_hashes, p_status, p_resources, p_codigos, p_motivos, p_refusals)
  ON CONFLICT (conta_id, chave_id, key) DO UPDATE
     SET route = excluded.route, request_hash = excluded.request_hash, status_code = excluded.status_code,
         resource_id = excluded.resource_id, codigo = excluded.codigo, motivo = excluded.motivo, refusals = excluded.refusals,
         created_at = now(), expires_at = now() + interval '24 hours'
   WHERE k.expires_at <= now();
END $$;

-- The same for one request.
CREATE FUNCTION api_idempotency_record(
  p_conta_id uuid, p_chave_id uuid, p_key text, p_route text, p_hash bytea, p_status int, p_resource_id uuid,
  p_codigo text, p_motivo text, p_refusals jsonb DEFAULT NULL
) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  PERFORM api_idempotency_records(ARRAY[p_conta_id], ARRAY[p_chave_id], ARRAY[p_key], ARRAY[p_route], ARRAY[p_hash],
                                  ARRAY[p_status], ARRAY[p_resource_id], ARRAY[p_codigo], ARRAY[p_motivo], ARRAY[p_refusals]);
END $$;
