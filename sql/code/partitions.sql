-- History tables partitioned by day (UTC) of their time column (issue 21; docs/scaling.md): the
-- partitions made ahead of time, and retention by dropping whole days: request_log
-- (sql/migrations/0014_request_log_por_dia.sql) and the webhook pipeline's archive
-- (sql/migrations/0017_arquivo_do_pipeline.sql).
--
-- Partition names are the table's with the day, request_log_20261125; the bounds are midnight UTC
-- to midnight UTC. Table and partition names reach EXECUTE only through format('%I'), and only
-- from daily_partitioned_tables() or from the catalog.

-- The tables partitioned by day and the column each is partitioned by.
CREATE FUNCTION daily_partitioned_tables(OUT table_name text, OUT column_name text) RETURNS SETOF record
LANGUAGE sql IMMUTABLE AS $$
  VALUES ('request_log', 'created_at'), ('outbox_archive', 'encerrado_em'), ('deliveries_archive', 'encerrado_em'),
         ('delivery_attempts_archive', 'encerrado_em')
$$;

-- The partition of p_table for the day p_day, made if it is missing; true when this call made it.
-- Rows the default partition took for that day (its partition came late) move into it first, so
-- the default partition stays empty in the normal course. Concurrent callers (two workers, the
-- release) take turns on a lock of the partition's own.
CREATE FUNCTION ensure_day_partition(p_table text, p_day date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_column text := (SELECT t.column_name FROM daily_partitioned_tables() t WHERE t.table_name = p_table);
  -- Partitions live in their table's schema, whatever the session's search_path.
  v_schema text := (SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = p_table::regclass);
  v_name text := p_table || '_' || to_char(p_day, 'YYYYMMDD');
  v_from timestamptz := p_day::timestamp AT TIME ZONE 'UTC';
  v_to timestamptz := (p_day + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
  IF v_column IS NULL THEN
    RAISE EXCEPTION 'ensure_day_partition: % is not partitioned by day', p_table USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('ensure_day_partition:' || v_name, 0));
  IF to_regclass(format('%I.%I', v_schema, v_name)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_schema, v_name, v_schema, p_table);
  EXECUTE format('WITH moved AS (DELETE FROM %I.%I WHERE %I >= $1 AND %I < $2 RETURNING *) INSERT INTO %I.%I SELECT * FROM moved',
                 v_schema, p_table || '_default', v_column, v_column, v_schema, v_name) USING v_from, v_to;
  -- Attaching checks that the default partition holds no row of the day: it was just emptied of
  -- them, and it is empty in the normal course, so the check reads nothing.
  EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)', v_schema, p_table, v_schema, v_name, v_from, v_to);
  RETURN true;
END $$;

-- Every table's partitions from today (UTC) to p_days days ahead; how many this call made.
CREATE FUNCTION ensure_partitions(p_days int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_today date := (now() AT TIME ZONE 'UTC')::date;
  v_made int := 0;
  t record;
BEGIN
  FOR t IN SELECT * FROM daily_partitioned_tables() LOOP
    FOR d IN 0 .. p_days LOOP
      IF ensure_day_partition(t.table_name, v_today + d) THEN
        v_made := v_made + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN v_made;
END $$;

-- Drops the partitions of p_table whose whole day ended before p_before (their rows all past the
-- retention): the names of those dropped. Each drop takes the parent's lock for an instant;
-- lock_timeout, set by the caller, keeps it from queueing behind a long transaction (the next run
-- takes what this one could not). Callers at once (two workers) take turns on a lock of the table's
-- own, so each partition is dropped by one of them and the other finds it gone.
CREATE FUNCTION drop_expired_partitions(p_table text, p_before timestamptz) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  v_removed text[] := '{}'::text[];
  p record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('drop_expired_partitions:' || p_table, 0));
  FOR p IN
    SELECT n.nspname, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE i.inhparent = p_table::regclass AND c.relname ~ ('^' || p_table || '_[0-9]{8}$')
       AND (to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' <= p_before
     ORDER BY c.relname
  LOOP
    EXECUTE format('DROP TABLE %I.%I', p.nspname, p.relname);
    v_removed := v_removed || p.relname::text;
  END LOOP;
  RETURN v_removed;
END $$;
