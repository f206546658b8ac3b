-- Webhook endpoints per plan. (The hourly delivery cap is reserved inside the worker's statements:
-- reserveFor, shared/db/deliveries.ts.)

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
