-- Accounts, users and API keys: their rows kept current, the own location every account has, and
-- the active keys per plan.

CREATE TRIGGER contas_touch BEFORE UPDATE ON contas FOR EACH ROW EXECUTE FUNCTION touch_row();
CREATE TRIGGER usuarios_touch BEFORE UPDATE ON usuarios FOR EACH ROW EXECUTE FUNCTION touch_row();

CREATE FUNCTION contas_local_proprio() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO locais (conta_id, nome, tipo) VALUES (NEW.id, 'Estoque próprio', 'proprio');
  RETURN NEW;
END $$;
CREATE TRIGGER contas_local_proprio AFTER INSERT ON contas
  FOR EACH ROW EXECUTE FUNCTION contas_local_proprio();

-- Active keys per plan (contract §5.6), enforced where no race can pass it: the account row is
-- locked, so two concurrent creations are counted one after the other.
CREATE FUNCTION chaves_api_limite_do_plano() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
  v_limite int;
  v_ativas int;
BEGIN
  SELECT p.chaves_ativas INTO v_limite
    FROM contas c JOIN planos p ON p.id = c.plano_id
   WHERE c.id = NEW.conta_id
     FOR UPDATE OF c;
  SELECT count(*)::int INTO v_ativas
    FROM chaves_api
   WHERE conta_id = NEW.conta_id AND revogada_em IS NULL AND (expira_em IS NULL OR expira_em > now());
  IF v_ativas >= v_limite THEN
    RAISE EXCEPTION 'the plan allows % active API keys and the account has %', v_limite, v_ativas
      USING ERRCODE = 'check_violation', CONSTRAINT = 'chaves_ativas_do_plano';
  END IF;
  RETURN NEW;
END $$;
CREATE TRIGGER chaves_api_limite BEFORE INSERT ON chaves_api
  FOR EACH ROW EXECUTE FUNCTION chaves_api_limite_do_plano();
