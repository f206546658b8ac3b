-- POST /eventos/recuperar (docs/decisions/0043-recovery-by-time-range.md): what each call answered,
-- kept so that a repetition of its Idempotency-Key answers the same counts. They cannot be read
-- again: the call changed what they count. Kept as long as the key can be repeated (purged with the
-- idempotency records).
CREATE TABLE recuperacoes (
  conta_id uuid NOT NULL REFERENCES contas (id),
  id uuid NOT NULL DEFAULT gen_random_uuid(),
  criado_em timestamptz NOT NULL DEFAULT now(),
  resposta jsonb NOT NULL CHECK (jsonb_typeof(resposta) = 'object'),
  PRIMARY KEY (conta_id, id)
);
CREATE INDEX recuperacoes_criado_em ON recuperacoes (criado_em);
