-- Admission (DESIGN §3.3): one round trip decides whether a request may run.
-- Authentication, then authorization; limits are charged by a later migration of the same function.

-- Calls per calendar month (UTC) per account: durable, it is what the monthly quota counts.
CREATE TABLE uso_mensal (
  conta_id uuid NOT NULL REFERENCES contas (id),
  mes date NOT NULL CHECK (extract(day FROM mes) = 1),
  chamadas int NOT NULL DEFAULT 0 CHECK (chamadas >= 0),
  PRIMARY KEY (conta_id, mes)
);

CREATE TYPE admission AS (
  outcome text,          -- ok | nao_autenticado | escopo_insuficiente | indisponivel
  reason text,           -- why a 403 or 503 was given (for the detail text and the log)
  conta_id uuid,
  chave_id uuid,
  usuario_id uuid,
  plano_id text,
  permissoes text[]
);

CREATE FUNCTION api_admit(p_token_hash bytea, p_escopo text, p_permissao text)
RETURNS admission
LANGUAGE plpgsql AS $$
DECLARE
  k record;
  r admission;
BEGIN
  SELECT ch.conta_id, ch.id, ch.usuario_id, ch.escopos, ch.expira_em, ch.revogada_em, ch.suspensa_ate,
         ch.ultimo_uso_em, c.bloqueada, c.api_ativa, c.plano_id, p.api_disponivel,
         CASE WHEN u.ativo THEN u.permissoes ELSE '{}'::text[] END AS permissoes
    INTO k
    FROM chaves_api ch
    JOIN contas c ON c.id = ch.conta_id
    JOIN planos p ON p.id = c.plano_id
    JOIN usuarios u ON u.conta_id = ch.conta_id AND u.id = ch.usuario_id
   WHERE ch.token_hash = p_token_hash;

  IF NOT FOUND OR k.revogada_em IS NOT NULL OR (k.expira_em IS NOT NULL AND k.expira_em <= now()) THEN
    r.outcome := 'nao_autenticado';
    RETURN r;
  END IF;

  r.conta_id := k.conta_id;
  r.chave_id := k.id;
  r.usuario_id := k.usuario_id;
  r.plano_id := k.plano_id;
  r.permissoes := k.permissoes;
  r.outcome := 'escopo_insuficiente';
  IF k.bloqueada THEN
    r.reason := 'conta_bloqueada';
  ELSIF NOT k.api_ativa OR NOT k.api_disponivel THEN
    r.reason := 'modulo_desligado';
  ELSIF k.suspensa_ate IS NOT NULL AND k.suspensa_ate > now() THEN
    r.reason := 'chave_suspensa';
  ELSIF p_escopo IS NOT NULL AND NOT (p_escopo = ANY (k.escopos)) THEN
    r.reason := 'escopo';
  ELSIF p_permissao IS NOT NULL AND NOT (p_permissao = ANY (k.permissoes)) THEN
    r.reason := 'permissao';
  ELSIF NOT (SELECT api_enabled FROM platform) THEN
    r.outcome := 'indisponivel';
    r.reason := 'api_desligada';
  ELSE
    r.outcome := 'ok';
    -- Last use is for people, not for rules: minute precision spares a write per request.
    IF k.ultimo_uso_em IS NULL OR k.ultimo_uso_em < now() - interval '1 minute' THEN
      UPDATE chaves_api SET ultimo_uso_em = now() WHERE conta_id = k.conta_id AND id = k.id;
    END IF;
  END IF;
  RETURN r;
END $$;
