-- Webhook deliveries per hour per account (contract §8.1, planos.entregas_webhook_por_hora). Every
-- HTTP request to a receiver counts, retries included; deliveries over the cap wait for the next
-- hour (UTC hours) and none is dropped.

CREATE TABLE webhook_uso_por_hora (
  conta_id uuid NOT NULL REFERENCES contas (id),
  hora timestamptz NOT NULL CHECK (hora = date_trunc('hour', hora, 'UTC')),
  entregas int NOT NULL DEFAULT 0 CHECK (entregas >= 0),
  PRIMARY KEY (conta_id, hora)
);

-- Grants up to p_quantidades[i] deliveries to account p_contas[i] in the current hour and returns
-- how many each got. Accounts are locked in id order, so two workers reserving for the same
-- accounts never deadlock. The counter is short-lived: its transaction commits without waiting
-- for the WAL flush (DESIGN §3), since losing the last few increments in a crash only lets a few
-- more deliveries out that hour. Call it in a transaction of its own.
CREATE FUNCTION reservar_entregas_webhook(p_contas uuid[], p_quantidades int[])
RETURNS TABLE (conta_id uuid, concedidas int)
LANGUAGE plpgsql AS $$
DECLARE
  v_hora timestamptz := date_trunc('hour', now(), 'UTC');
  r record;
  v_limite int;
  v_usadas int;
BEGIN
  PERFORM set_config('synchronous_commit', 'off', true);
  FOR r IN
    SELECT x.conta_id, sum(x.quantidade)::int AS quantidade
      FROM unnest(p_contas, p_quantidades) AS x (conta_id, quantidade)
     GROUP BY x.conta_id ORDER BY x.conta_id
  LOOP
    INSERT INTO webhook_uso_por_hora (conta_id, hora) VALUES (r.conta_id, v_hora)
    ON CONFLICT ON CONSTRAINT webhook_uso_por_hora_pkey DO NOTHING;
    SELECT u.entregas, p.entregas_webhook_por_hora INTO v_usadas, v_limite
      FROM webhook_uso_por_hora u
      JOIN contas c ON c.id = u.conta_id
      JOIN planos p ON p.id = c.plano_id
     WHERE u.conta_id = r.conta_id AND u.hora = v_hora
       FOR UPDATE OF u;
    conta_id := r.conta_id;
    concedidas := greatest(0, least(r.quantidade, v_limite - v_usadas));
    IF concedidas > 0 THEN
      UPDATE webhook_uso_por_hora u SET entregas = u.entregas + concedidas
       WHERE u.conta_id = r.conta_id AND u.hora = v_hora;
    END IF;
    RETURN NEXT;
  END LOOP;
END $$;
