-- request_log, one row per request, becomes range-partitioned by the day (UTC) of created_at
-- (issue 21): its 30-day retention drops a whole day's partition instead of deleting the day's rows
-- from one heap and its indexes. Ids are time-ordered (UUIDv7, made by the web process), so a
-- day's inserts stay at the right edge of its partition's indexes.
--
-- The primary key takes created_at, the partition key, as every unique key of a partitioned table
-- must. A default partition takes any row whose day has no partition yet, so a missing partition
-- never fails a request; the day's partition, when it comes, takes its rows from there
-- (particao_do_dia, sql/code/particoes.sql). The release makes today's and tomorrow's partitions,
-- the worker a week ahead. The rows of the table as it was go to the default partition, and leave it
-- as their days get partitions or reach the end of their retention.
ALTER TABLE request_log RENAME TO request_log_sem_particoes;
ALTER INDEX request_log_pkey RENAME TO request_log_sem_particoes_pkey;
ALTER INDEX request_log_created RENAME TO request_log_sem_particoes_created;
ALTER INDEX request_log_conta RENAME TO request_log_sem_particoes_conta;

CREATE TABLE request_log (
  requisicao_id uuid NOT NULL,
  conta_id uuid,
  chave_id uuid,
  method text NOT NULL,
  route text,
  path text NOT NULL,
  status int NOT NULL CHECK (status BETWEEN 100 AND 599),
  codigo text,
  cost int NOT NULL DEFAULT 0 CHECK (cost >= 0),
  duration_ms real NOT NULL CHECK (duration_ms >= 0),
  ip text,
  created_at timestamptz NOT NULL,
  PRIMARY KEY (requisicao_id, created_at)
) PARTITION BY RANGE (created_at);
CREATE INDEX request_log_created ON request_log (created_at);
CREATE INDEX request_log_conta ON request_log (conta_id, created_at) WHERE conta_id IS NOT NULL;
CREATE TABLE request_log_padrao PARTITION OF request_log DEFAULT;

INSERT INTO request_log SELECT * FROM request_log_sem_particoes;
DROP TABLE request_log_sem_particoes;
