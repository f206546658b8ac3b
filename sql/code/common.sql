-- What every module's rows share: atualizado_em and the row version kept current, the refusal of a
-- transition the state machines do not allow, and per-account sequential numbers.

-- Keeps atualizado_em current on every update.
CREATE FUNCTION touch_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.atualizado_em := now();
  RETURN NEW;
END $$;

-- Keeps atualizado_em and the row version (the source of ETags) current on every update.
CREATE FUNCTION touch_versioned_row() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  NEW.atualizado_em := now();
  NEW.row_version := OLD.row_version + 1;
  RETURN NEW;
END $$;

-- Every state machine (docs/decisions/0029-quotation-and-order-states.md) in one table: the
-- quotation, the production order, the payment of an order and an order's item, each as (machine,
-- from, to). A new row goes from 'novo' ('nova' for a quotation) to the state it must start in.
-- shared/domain holds the same table for the API's schemas and the tests.
CREATE FUNCTION transicao_permitida(p_maquina text, p_de text, p_para text) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
  SELECT (p_maquina, p_de, p_para) IN (
    ('cotacao', 'nova', 'rascunho'),
    ('cotacao', 'rascunho', 'enviada'), ('cotacao', 'rascunho', 'cancelada'),
    ('cotacao', 'enviada', 'aprovada'), ('cotacao', 'enviada', 'recusada'), ('cotacao', 'enviada', 'rascunho'),
    ('cotacao', 'enviada', 'expirada'), ('cotacao', 'recusada', 'rascunho'),
    ('pedido', 'novo', 'aberto'),
    ('pedido', 'aberto', 'em_producao'), ('pedido', 'aberto', 'cancelado'),
    ('pedido', 'em_producao', 'finalizado'), ('pedido', 'em_producao', 'cancelado'), ('pedido', 'em_producao', 'aberto'),
    -- Payment only moves forward; paying in full at once is allowed.
    ('pagamento', 'nao_pago', 'sinal_pago'), ('pagamento', 'nao_pago', 'pago'), ('pagamento', 'sinal_pago', 'pago'),
    ('item', 'ativo', 'finalizado'), ('item', 'ativo', 'retirado'))
$$;

-- A change of state the machine does not allow raises check_violation on a named pseudo-constraint,
-- which shared/errors.ts maps to 422 with motivo transicao_invalida. A state left as it was is no
-- change.
CREATE FUNCTION exigir_transicao(p_maquina text, p_de text, p_para text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
  IF p_de IS DISTINCT FROM p_para AND transicao_permitida(p_maquina, p_de, p_para) IS NOT TRUE THEN
    RAISE EXCEPTION '% cannot go from % to %', p_maquina, p_de, p_para
      USING ERRCODE = 'check_violation', CONSTRAINT = 'transicao_invalida';
  END IF;
END $$;

-- A new quotation or order gets the next number of its account (the argument names the counter),
-- unless the writer gave it one.
CREATE FUNCTION numerar() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.numero IS NULL THEN
    NEW.numero := proximo_numero(NEW.conta_id, TG_ARGV[0]);
  END IF;
  RETURN NEW;
END $$;

CREATE FUNCTION proximo_numero(p_conta_id uuid, p_tipo text) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_numero int;
BEGIN
  IF p_tipo = 'cotacao' THEN
    UPDATE contas SET ultimo_numero_cotacao = ultimo_numero_cotacao + 1
     WHERE id = p_conta_id RETURNING ultimo_numero_cotacao INTO v_numero;
  ELSE
    UPDATE contas SET ultimo_numero_pedido = ultimo_numero_pedido + 1
     WHERE id = p_conta_id RETURNING ultimo_numero_pedido INTO v_numero;
  END IF;
  RETURN v_numero;
END $$;

-- A moment as the API writes it (contract §1): ISO 8601 in UTC to the millisecond, "…T…Z", as the
-- representations PostgreSQL builds for the API show every timestamp.
CREATE FUNCTION instante(p_momento timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
  SELECT to_char(p_momento AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;
