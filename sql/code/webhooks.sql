-- Webhook endpoints per plan, and the hourly delivery cap the worker reserves deliveries against.

CREATE TRIGGER webhook_endpoints_touch BEFORE UPDATE ON webhook_endpoints
  FOR EACH ROW EXECUTE FUNCTION touch_row();

-- Endpoints per plan (contract §6, §8.1) counted over active endpoints, under the account's lock.
CREATE FUNCTION webhook_endpoints_limite_do_plano() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_limite int;
  v_ativos int;
BEGIN
  IF NOT NEW.ativo OR (TG_OP = 'UPDATE' AND OLD.ativo) THEN
    RETURN NEW;
  END IF;
  SELECT p.webhook_endpoints INTO v_limite
    FROM contas c JOIN planos p ON p.id = c.plano_id
   WHERE c.id = NEW.conta_id
     FOR UPDATE OF c;
  SELECT count(*)::int INTO v_ativos FROM webhook_endpoints WHERE conta_id = NEW.conta_id AND ativo;
  IF v_ativos >= v_limite THEN
    RAISE EXCEPTION 'the plan allows % active webhook endpoints and the account has %', v_limite, v_ativos
      USING ERRCODE = 'check_violation', CONSTRAINT = 'webhook_endpoints_do_plano';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER webhook_endpoints_limite BEFORE INSERT OR UPDATE OF ativo ON webhook_endpoints
  FOR EACH ROW EXECUTE FUNCTION webhook_endpoints_limite_do_plano();

-- Grants up to p_quantidades[i] deliveries to account p_contas[i] in the current hour and returns
-- how many each got, in one statement: the hour's row of each account is inserted or, when it
-- exists, locked and added to, in account order (so two workers reserving for the same accounts
-- never deadlock), and each row keeps what this reservation granted (ultima_reserva), which is what
-- RETURNING can read. The worker calls it in the statements that take deliveries and record their
-- attempts' start (takeDeliveries and relayOutbox), which commit durably for the attempts' sake.
CREATE FUNCTION reservar_entregas_webhook(p_contas uuid[], p_quantidades int[])
RETURNS TABLE (conta_id uuid, concedidas int)
LANGUAGE plpgsql AS $$
BEGIN
  RETURN QUERY
  WITH pedidas AS (
    SELECT x.conta_id, sum(x.quantidade)::int AS n
      FROM unnest(p_contas, p_quantidades) AS x (conta_id, quantidade)
     GROUP BY x.conta_id
  ), reservadas AS (
    -- A new hour grants what its plan allows; an hour begun grants what is left of it.
    INSERT INTO webhook_uso_por_hora AS u (conta_id, hora, entregas, ultima_reserva)
    SELECT p.conta_id, date_trunc('hour', now(), 'UTC'), least(p.n, pl.entregas_webhook_por_hora), least(p.n, pl.entregas_webhook_por_hora)
      FROM pedidas p JOIN contas c ON c.id = p.conta_id JOIN planos pl ON pl.id = c.plano_id
     ORDER BY p.conta_id
    ON CONFLICT ON CONSTRAINT webhook_uso_por_hora_pkey DO UPDATE
      SET (ultima_reserva, entregas) = (
        SELECT g.n, u.entregas + g.n
          FROM (SELECT least(excluded.ultima_reserva, greatest(0, pl.entregas_webhook_por_hora - u.entregas)) AS n
                  FROM contas c JOIN planos pl ON pl.id = c.plano_id WHERE c.id = u.conta_id) g)
    RETURNING u.conta_id, u.ultima_reserva
  )
  SELECT r.conta_id, r.ultima_reserva FROM reservadas r;
END $$;
