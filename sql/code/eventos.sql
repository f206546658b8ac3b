-- The one way every writer (API, operator CLI, routines, plain SQL of the application) puts an
-- event in the outbox, in the transaction of the change it reports.

-- Grouped types (contract §6.2): at most one event per key per 60 s window. The first change of a
-- key opens the window; later changes refresh the pending row with their data until the window
-- ends and the worker relays it. shared/domain/eventos.ts marks the same types as agrupado.
CREATE FUNCTION agrupamento_do_evento(p_tipo text, p_dados jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
  SELECT CASE p_tipo
    WHEN 'estoque.movimentado' THEN p_tipo || ':' || (p_dados ->> 'variacao_id')
    WHEN 'produto.atualizado' THEN p_tipo || ':' || (p_dados ->> 'id')
  END
$$;

-- Grouped events (estoque.movimentado, produto.atualizado) mostly join a pending event: try that
-- first, and insert only when there is none (the insert's conflict clause still settles a race).
CREATE FUNCTION emit_event(p_conta_id uuid, p_tipo text, p_dados jsonb, p_endpoint_id uuid DEFAULT NULL)
RETURNS uuid
LANGUAGE plpgsql AS $$
DECLARE
  v_grupo text := agrupamento_do_evento(p_tipo, p_dados);
  v_id uuid;
BEGIN
  IF v_grupo IS NULL THEN
    INSERT INTO outbox (conta_id, tipo, dados, endpoint_id)
    VALUES (p_conta_id, p_tipo, p_dados, p_endpoint_id)
    RETURNING id INTO v_id;
    -- Delivered at commit: wakes the worker's relay at once instead of at its next poll.
    PERFORM pg_notify('outbox', '');
    RETURN v_id;
  END IF;
  -- criado_em follows the latest data the event carries.
  UPDATE outbox SET dados = p_dados, criado_em = now()
   WHERE conta_id = p_conta_id AND group_key = v_grupo AND relayed_at IS NULL
  RETURNING id INTO v_id;
  IF FOUND THEN
    RETURN v_id;
  END IF;
  INSERT INTO outbox (conta_id, tipo, dados, group_key, available_at)
  VALUES (p_conta_id, p_tipo, p_dados, v_grupo, now() + interval '60 seconds')
  ON CONFLICT (conta_id, group_key) WHERE relayed_at IS NULL AND group_key IS NOT NULL
  DO UPDATE SET dados = excluded.dados, criado_em = excluded.criado_em
  RETURNING id INTO v_id;
  RETURN v_id;
END $$;

-- Who made the change, as the transaction declared it with set_config('app.via' / 'app.chave_id',
-- ..., true); a change with no declaration came from the application's screen.
CREATE FUNCTION origem_da_mudanca() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'via', coalesce(nullif(current_setting('app.via', true), ''), 'tela'),
    'chave_id', nullif(current_setting('app.chave_id', true), '')::uuid)
$$;

-- The external references of a movement, quotation or production order (docs/decisions.md,
-- "External references"), as the events about it carry them in dados. One expression, inlined into
-- the trigger's statement that builds the event: STABLE like jsonb_build_object (an IMMUTABLE
-- function around a STABLE one is never inlined, and a SQL function called is planned each time).
CREATE FUNCTION referencias_do_registro(p_referencia_externa text, p_metadados jsonb) RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('referencia_externa', p_referencia_externa, 'metadados', coalesce(p_metadados, '{}'::jsonb))
$$;
