-- The one way every writer (API, operator CLI, routines, plain SQL of the application) puts an
-- event in the outbox, in the transaction of the change it reports.

-- Grouped types (contract §6.2): at most one event per key per 60 s window. The first change of a
-- key opens the window with a pending row; later changes join it without writing anything, and the
-- worker's relay, when the window ends, sends the key's latest data (evento_agrupado_atual).
-- shared/domain/eventos.ts marks the same types as agrupado.
CREATE FUNCTION agrupamento_do_evento(p_tipo text, p_dados jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_tipo
    WHEN 'estoque.movimentado' THEN p_tipo || ':' || (p_dados ->> 'variacao_id')
    WHEN 'produto.atualizado' THEN p_tipo || ':' || (p_dados ->> 'id')
  END
$$;

-- The advisory lock that orders a group's writers before the relay: each writer holds it shared
-- until it commits, and the relay takes it exclusively, without waiting, before it reads the group's
-- latest data. A collision of two groups' keys only makes the relay wait a pass.
CREATE FUNCTION evento_grupo_lock(p_conta_id uuid, p_grupo text) RETURNS bigint
LANGUAGE sql IMMUTABLE AS $$
  SELECT hashtextextended(p_conta_id::text || p_grupo, 7410205)
$$;

-- The W3C traceparent the transaction declared with set_config('app.traceparent', ..., true) (the
-- API's traced requests do: docs/decisions/0049-opentelemetry.md), or NULL: none, or not well-formed.
CREATE FUNCTION trace_context_of_change() RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT t FROM (SELECT current_setting('app.traceparent', true) AS t) s
   WHERE t ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$'
$$;

-- Puts an event in the outbox; returns its id, or NULL when it joined the pending event of its
-- group. A grouped event (estoque.movimentado, produto.atualizado) mostly finds its group's window
-- open: it then writes nothing (refreshing the pending row cost every movement a row version, its
-- index entries and WAL: docs/decisions/0033-grouped-events-write-nothing.md), and the relay reads
-- the data when the window ends.
CREATE FUNCTION emit_event(p_conta_id uuid, p_tipo text, p_dados jsonb, p_endpoint_id uuid DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
  v_grupo text := agrupamento_do_evento(p_tipo, p_dados);
  v_id uuid;
  v_trace text := trace_context_of_change();
BEGIN
  IF v_grupo IS NULL THEN
    INSERT INTO outbox (conta_id, tipo, dados, endpoint_id, traceparent)
    VALUES (p_conta_id, p_tipo, p_dados, p_endpoint_id, v_trace)
    RETURNING id INTO v_id;
    -- Delivered at commit: wakes the worker's relay at once instead of at its next poll.
    PERFORM pg_notify('outbox', '');
    RETURN v_id;
  END IF;
  -- Held to commit: the relay leaves the group for a later pass until this change is visible to it.
  -- The statements below take their snapshots after the lock: a window the relay closed meanwhile
  -- is seen closed, and this change opens the next one.
  PERFORM pg_advisory_xact_lock_shared(evento_grupo_lock(p_conta_id, v_grupo));
  PERFORM FROM outbox WHERE conta_id = p_conta_id AND group_key = v_grupo AND relayed_at IS NULL;
  IF FOUND THEN
    RETURN NULL;
  END IF;
  INSERT INTO outbox (conta_id, tipo, dados, group_key, available_at, traceparent)
  VALUES (p_conta_id, p_tipo, p_dados, v_grupo, now() + interval '60 seconds', v_trace)
  ON CONFLICT (conta_id, group_key) WHERE relayed_at IS NULL AND group_key IS NOT NULL DO NOTHING
  RETURNING id INTO v_id;
  RETURN v_id;
END $$;

-- A grouped event's data as the relay sends it: its key's latest (the latest movement of the
-- variation, the product as it is now) and when that was, or NULLs to keep what the pending row
-- holds. VOLATILE, so its statements see what committed before the relay took the group's lock,
-- not only what its own statement's snapshot saw.
CREATE FUNCTION evento_agrupado_atual(p_conta_id uuid, p_tipo text, p_dados jsonb, OUT dados jsonb, OUT criado_em timestamptz)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  IF p_tipo = 'estoque.movimentado' THEN
    SELECT estoque_movimentado_dados(m), m.criado_em INTO dados, criado_em
      FROM estoque_movimentos m
     WHERE m.conta_id = p_conta_id AND m.variacao_id = (p_dados ->> 'variacao_id')::uuid
     ORDER BY m.criado_em DESC, m.id DESC
     LIMIT 1;
  ELSIF p_tipo = 'produto.atualizado' THEN
    SELECT produto_evento_dados(p.id, p.sku), p.atualizado_em INTO dados, criado_em
      FROM produtos p WHERE p.conta_id = p_conta_id AND p.id = (p_dados ->> 'id')::uuid;
  END IF;
END $$;

-- Who made the change, as the transaction declared it with set_config('app.via' / 'app.chave_id',
-- ..., true); a change with no declaration came from the application's screen.
CREATE FUNCTION origem_da_mudanca() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'via', coalesce(nullif(current_setting('app.via', true), ''), 'tela'),
    'chave_id', nullif(current_setting('app.chave_id', true), '')::uuid)
$$;

-- The external references of a movement, quotation or production order
-- (docs/decisions/0031-external-references.md), as the events about it carry them in dados. One
-- expression, inlined into the trigger's statement that builds the event: STABLE like
-- jsonb_build_object (an IMMUTABLE function around a STABLE one is never inlined, and a SQL
-- function called is planned each time).
CREATE FUNCTION referencias_do_registro(p_referencia_externa text, p_metadados jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('referencia_externa', p_referencia_externa, 'metadados', coalesce(p_metadados, '{}'::jsonb))
$$;
