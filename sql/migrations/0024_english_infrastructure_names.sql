-- One language per concept (docs/decisions/0048-english-infrastructure-names.md): the counters of
-- admission and the history of suspensions are infrastructure, like the deliveries and the hourly
-- delivery counter (0022), and are named in English; the contract's nouns (contas, chaves_api,
-- planos and their columns, the limits' names stored in a row) keep theirs. A rename takes a
-- moment's lock and moves no row; constraints, indexes and the identity's sequence are renamed
-- where their names carry the old words. The code (sql/code) is rebuilt by the same release with
-- the new names; the functions renamed there (registrar_suspensao, regra_de_suspensao,
-- suspensao_recusas, suspensao_minutos) and the view uso_mensal_efetivo go with the old code schema.

-- The month counter (0007): calls per calendar month (UTC) per account, durable.
ALTER TABLE uso_mensal RENAME TO monthly_usage;
ALTER TABLE monthly_usage RENAME COLUMN mes TO month;
ALTER TABLE monthly_usage RENAME COLUMN chamadas TO calls;
ALTER TABLE monthly_usage RENAME CONSTRAINT uso_mensal_pkey TO monthly_usage_pkey;
ALTER TABLE monthly_usage RENAME CONSTRAINT uso_mensal_conta_id_fkey TO monthly_usage_conta_id_fkey;
ALTER TABLE monthly_usage RENAME CONSTRAINT uso_mensal_mes_check TO monthly_usage_month_check;
ALTER TABLE monthly_usage RENAME CONSTRAINT uso_mensal_chamadas_check TO monthly_usage_calls_check;
COMMENT ON COLUMN monthly_usage.calls IS
  'Units charged for the month, durably: the calls made plus what is left of the advance (month_advances). The calls made: effective_monthly_usage.';

-- The month's advance (0007), already English but for its month.
ALTER TABLE month_advances RENAME COLUMN mes TO month;
ALTER TABLE month_advances RENAME CONSTRAINT month_advances_mes_check TO month_advances_month_check;

-- Every suspension of a key (0008). The limit keeps its values (simultaneas, rajada, minuto, mes):
-- they are the limits' names the API answers with.
ALTER TABLE suspensoes RENAME TO suspensions;
ALTER TABLE suspensions RENAME COLUMN inicio TO started_at;
ALTER TABLE suspensions RENAME COLUMN fim TO ends_at;
ALTER TABLE suspensions RENAME COLUMN limite TO limit_name;
ALTER TABLE suspensions RENAME COLUMN recusas TO refusals;
ALTER TABLE suspensions RENAME COLUMN avisada TO notified;
ALTER TABLE suspensions RENAME CONSTRAINT suspensoes_pkey TO suspensions_pkey;
ALTER TABLE suspensions RENAME CONSTRAINT suspensoes_conta_id_chave_id_fkey TO suspensions_conta_id_chave_id_fkey;
ALTER TABLE suspensions RENAME CONSTRAINT suspensoes_limite_check TO suspensions_limit_name_check;
ALTER TABLE suspensions RENAME CONSTRAINT suspensoes_retry_after_check TO suspensions_retry_after_check;
ALTER TABLE suspensions RENAME CONSTRAINT suspensoes_recusas_check TO suspensions_refusals_check;
ALTER TABLE suspensions RENAME CONSTRAINT suspensoes_check TO suspensions_check;
ALTER INDEX suspensoes_inicio RENAME TO suspensions_started_at;
ALTER INDEX suspensoes_avisadas RENAME TO suspensions_notified;
ALTER SEQUENCE suspensoes_id_seq RENAME TO suspensions_id_seq;

-- The refused items of a refused batch kept with its Idempotency-Key (0009), and the claim that
-- hands them back. The body's field stays `recusas` (contract).
ALTER TABLE idempotency_keys RENAME COLUMN recusas TO refusals;
ALTER TYPE api_write_claim RENAME ATTRIBUTE recusas TO refusals;

-- The row type of an admission (0007), unused since admission answers one line of text per request
-- (sql/code/admission_rules.sql, admission_answer): dropped rather than renamed.
DROP TYPE admission;
