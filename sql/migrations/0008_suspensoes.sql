-- Every suspension of a key (contract §8.4: consecutive limit refusals suspend it): when, until when,
-- the limit and the Retry-After of the refusal that caused it, and whether the key's creator was
-- e-mailed (at most once a day per key). What operators read to answer "why is this key
-- suspended", and what the e-mail says. A history table: purged after 30 days with the request log
-- (shared/db/retention.ts).
CREATE TABLE suspensoes (
  conta_id uuid NOT NULL,
  chave_id uuid NOT NULL,
  id bigint GENERATED ALWAYS AS IDENTITY,
  inicio timestamptz NOT NULL,
  fim timestamptz NOT NULL,
  limite text NOT NULL CHECK (limite IN ('simultaneas', 'rajada', 'minuto', 'mes')),
  retry_after int NOT NULL CHECK (retry_after >= 0),
  recusas int NOT NULL CHECK (recusas > 0),
  avisada boolean NOT NULL,
  PRIMARY KEY (conta_id, chave_id, id),
  FOREIGN KEY (conta_id, chave_id) REFERENCES chaves_api (conta_id, id) ON DELETE CASCADE,
  CHECK (fim > inicio)
);
-- The purge's order, and the once-a-day check of the e-mail.
CREATE INDEX suspensoes_inicio ON suspensoes (inicio);
CREATE INDEX suspensoes_avisadas ON suspensoes (conta_id, chave_id, inicio) WHERE avisada;
