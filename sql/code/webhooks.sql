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
-- how many each got. Accounts are locked in id order, so two workers reserving for the same
-- accounts never deadlock. The worker calls it in the statement that takes deliveries and records
-- their attempts' start (shared/db/deliveries.ts), which commits durably for the attempts' sake.
CREATE FUNCTION reservar_entregas_webhook(p_contas uuid[], p_quantidades int[])
RETURNS TABLE (conta_id uuid, concedidas int)
LANGUAGE plpgsql AS $$
DECLARE
  v_hora timestamptz := date_trunc('hour', now(), 'UTC');
  r record;
  v_limite int;
  v_usadas int;
BEGIN
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
