-- Issue 19, items 3-5: external references (referencia_externa, metadados) on stock movements,
-- quotations and production orders; the movements of a batch (POST /estoque/movimentos/lote) kept
-- together so a repetition reads them again; the refused items of a batch kept with its
-- Idempotency-Key; and the indexes of the movement history's filters, tenant first.

-- Part of the schema, not of sql/code: the CHECKs below depend on it, and the release rebuilds
-- code without touching tables. Stripe's limits (docs/decisions.md, "External references"): an
-- object of at most 20 keys of 1 to 40 characters, each value a string of at most 500. A movement's
-- insert is the hot path, so the CHECKs test for the empty object first (most rows), and the
-- function is PL/pgSQL: an insert prepares its CHECKs at every execution, and a SQL function there
-- is parsed again each time to see whether it can be inlined (measured: 36 µs a movement).
CREATE FUNCTION metadados_validos(m jsonb) RETURNS boolean
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  RETURN jsonb_typeof(m) = 'object'
     AND (SELECT count(*) <= 20
                 AND coalesce(bool_and(length(e.k) BETWEEN 1 AND 40 AND jsonb_typeof(e.v) = 'string' AND length(e.v #>> '{}') <= 500), true)
            FROM jsonb_each(m) AS e (k, v));
END $$;

ALTER TABLE estoque_movimentos
  ADD COLUMN referencia_externa text CHECK (length(referencia_externa) BETWEEN 1 AND 100),
  ADD COLUMN metadados jsonb NOT NULL DEFAULT '{}' CHECK (metadados = '{}' OR metadados_validos(metadados)),
  -- The batch a movement was posted in, and its place there (0-based); NULL for a movement alone.
  -- One CHECK for both: each CHECK is prepared again at every insert, and this is the hot path.
  ADD COLUMN lote_id uuid,
  ADD COLUMN lote_posicao int,
  ADD CONSTRAINT estoque_movimentos_lote CHECK (lote_id IS NULL AND lote_posicao IS NULL OR lote_id IS NOT NULL AND lote_posicao BETWEEN 0 AND 99);

-- Anonymization (LGPD) clears the metadados, which may carry personal data like a note does; the
-- CHECKs keep an anonymized record without them for good.
ALTER TABLE cotacoes
  ADD COLUMN referencia_externa text CHECK (length(referencia_externa) BETWEEN 1 AND 100),
  ADD COLUMN metadados jsonb NOT NULL DEFAULT '{}' CHECK (metadados = '{}' OR metadados_validos(metadados)),
  ADD CONSTRAINT cotacoes_anonimizada_sem_metadados CHECK (anonimizada_em IS NULL OR metadados = '{}');

ALTER TABLE pedidos_producao
  ADD COLUMN referencia_externa text CHECK (length(referencia_externa) BETWEEN 1 AND 100),
  ADD COLUMN metadados jsonb NOT NULL DEFAULT '{}' CHECK (metadados = '{}' OR metadados_validos(metadados)),
  ADD CONSTRAINT pedidos_producao_anonimizado_sem_metadados CHECK (anonimizado_em IS NULL OR metadados = '{}');

-- The movement history (GET /estoque/movimentos): every list in (criado_em, id) order within the
-- account, each filter an index range in that order. The old variation index lacked the id that
-- breaks ties between pages.
DROP INDEX estoque_movimentos_variacao;
CREATE INDEX estoque_movimentos_variacao ON estoque_movimentos (conta_id, variacao_id, criado_em, id);
CREATE INDEX estoque_movimentos_criado ON estoque_movimentos (conta_id, criado_em, id);
CREATE INDEX estoque_movimentos_tipo ON estoque_movimentos (conta_id, tipo, criado_em, id);
CREATE INDEX estoque_movimentos_motivo ON estoque_movimentos (conta_id, motivo, criado_em, id);
-- Partial: a movement without a reference (most of them, and every one of the hot path's benchmark)
-- touches neither.
CREATE INDEX estoque_movimentos_referencia ON estoque_movimentos (conta_id, referencia_externa, criado_em, id)
  WHERE referencia_externa IS NOT NULL;
CREATE INDEX estoque_movimentos_lote ON estoque_movimentos (conta_id, lote_id, lote_posicao) WHERE lote_id IS NOT NULL;
CREATE INDEX cotacoes_referencia ON cotacoes (conta_id, referencia_externa, criado_em, id)
  WHERE referencia_externa IS NOT NULL;
CREATE INDEX pedidos_producao_referencia ON pedidos_producao (conta_id, referencia_externa, criado_em, id)
  WHERE referencia_externa IS NOT NULL;

-- What estoque_movimentar() answers carries the references it recorded.
ALTER TYPE estoque_movimento ADD ATTRIBUTE referencia_externa text, ADD ATTRIBUTE metadados jsonb;

-- A refused batch is replayed with the index and reason of each refused item, as it was answered
-- (never the body or the response: [{indice, motivo, mensagem}]).
-- Written only by api_idempotency_record(), on every POST's path: no CHECK to prepare at each insert.
ALTER TABLE idempotency_keys ADD COLUMN recusas jsonb;
ALTER TYPE api_write_claim ADD ATTRIBUTE recusas jsonb;
