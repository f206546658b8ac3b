-- The one way every writer (API, operator CLI, routines, plain SQL of the application) puts an
-- event in the outbox, in the transaction of the change it reports.
CREATE FUNCTION emit_event(p_conta_id uuid, p_tipo text, p_dados jsonb) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO outbox (conta_id, tipo, dados) VALUES (p_conta_id, p_tipo, p_dados);
END $$;

-- Who made the change, as the transaction declared it with set_config('app.via' / 'app.chave_id',
-- ..., true); a change with no declaration came from the application's screen.
CREATE FUNCTION origem_da_mudanca() RETURNS jsonb
LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object(
    'via', coalesce(nullif(current_setting('app.via', true), ''), 'tela'),
    'chave_id', nullif(current_setting('app.chave_id', true), '')::uuid)
$$;
