-- The webhook pipeline's history leaves its working tables (issue 21, item 1; docs/decisions.md,
-- "The pipeline's archive"). outbox, deliveries and delivery_attempts stay small, unpartitioned
-- tables holding only the work in progress: events not relayed yet or with a delivery pending, and
-- deliveries pending. The worker moves what has ended into these archive tables, range-partitioned
-- by the day (UTC) of encerrado_em, when the row's work ended: for a delivery and its attempts, the
-- delivery's end; for an event, its relay or the end of its last delivery, whichever came later.
-- Retention (30 days from there) drops whole days. The hot path never reads the archive: scanning
-- 30 partitions cost every statement of the pipeline 0.1 to 0.3 ms (docs/decisions.md).
--
-- Archive rows are written once (a replay moves its event back to the working tables first,
-- restore_event in sql/code/archive.sql) and carry no foreign keys: the archiver moves an event only
-- with or after all its deliveries, and a delivery with all its attempts, in one statement.
-- The primary keys take encerrado_em, the partition key, as every unique key of a partitioned table
-- must. A default partition takes rows whose day has no partition (the worker makes them ahead;
-- rows archived long after they ended land there), and retention deletes from it in batches.
CREATE TABLE outbox_archive (
  conta_id uuid NOT NULL,
  id uuid NOT NULL,
  seq bigint NOT NULL,
  tipo text NOT NULL,
  dados jsonb NOT NULL,
  endpoint_id uuid,
  group_key text,
  available_at timestamptz NOT NULL,
  relayed_at timestamptz NOT NULL,
  criado_em timestamptz NOT NULL,
  encerrado_em timestamptz NOT NULL,
  PRIMARY KEY (conta_id, id, encerrado_em),
  CHECK (encerrado_em >= relayed_at)
) PARTITION BY RANGE (encerrado_em);
-- The event log of the API, newest first per account (as outbox_conta_criado on the working table).
CREATE INDEX outbox_archive_conta_criado ON outbox_archive (conta_id, criado_em, id);
CREATE TABLE outbox_archive_padrao PARTITION OF outbox_archive DEFAULT;

CREATE TABLE deliveries_archive (
  conta_id uuid NOT NULL,
  id uuid NOT NULL,
  event_id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  status text NOT NULL CHECK (status IN ('succeeded', 'failed')),
  attempts int NOT NULL CHECK (attempts >= 0),
  run_attempts int NOT NULL CHECK (run_attempts >= 0),
  next_attempt_at timestamptz NOT NULL,
  last_attempt_at timestamptz,
  last_error text CHECK (length(last_error) <= 1000),
  created_at timestamptz NOT NULL,
  completed_at timestamptz NOT NULL,
  encerrado_em timestamptz NOT NULL,
  PRIMARY KEY (conta_id, id, encerrado_em)
) PARTITION BY RANGE (encerrado_em);
CREATE INDEX deliveries_archive_event ON deliveries_archive (conta_id, event_id, endpoint_id);
CREATE INDEX deliveries_archive_failed ON deliveries_archive (completed_at) WHERE status = 'failed';
CREATE INDEX deliveries_archive_endpoint ON deliveries_archive (conta_id, endpoint_id, created_at);
CREATE TABLE deliveries_archive_padrao PARTITION OF deliveries_archive DEFAULT;

CREATE TABLE delivery_attempts_archive (
  conta_id uuid NOT NULL,
  delivery_id uuid NOT NULL,
  attempt int NOT NULL CHECK (attempt >= 1),
  started_at timestamptz NOT NULL,
  duration_ms int CHECK (duration_ms >= 0),
  succeeded boolean,
  response_status int CHECK (response_status BETWEEN 100 AND 599),
  response_body text CHECK (octet_length(response_body) <= 4096),
  error text CHECK (length(error) <= 1000),
  encerrado_em timestamptz NOT NULL,
  PRIMARY KEY (conta_id, delivery_id, attempt, encerrado_em),
  CHECK ((duration_ms IS NULL) = (succeeded IS NULL))
) PARTITION BY RANGE (encerrado_em);
CREATE INDEX delivery_attempts_archive_started ON delivery_attempts_archive (started_at);
CREATE TABLE delivery_attempts_archive_padrao PARTITION OF delivery_attempts_archive DEFAULT;

-- The archiver finds ended deliveries by their end, oldest first, and relayed events by their relay
-- from where its last pass stopped ((relayed_at, seq): many events share a relay's instant).
CREATE INDEX deliveries_ended ON deliveries (completed_at) WHERE completed_at IS NOT NULL;
DROP INDEX outbox_relayed;
CREATE INDEX outbox_relayed ON outbox (relayed_at, seq) WHERE relayed_at IS NOT NULL;
