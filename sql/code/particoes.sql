-- History tables partitioned by day (UTC) of their time column (issue 21; docs/scaling.md): the
-- partitions made ahead of time, and retention by dropping whole days: request_log
-- (sql/migrations/0014_request_log_por_dia.sql) and the webhook pipeline's archive
-- (sql/migrations/0017_arquivo_do_pipeline.sql).
--
-- Partition names are the table's with the day, request_log_20261125; the bounds are midnight UTC
-- to midnight UTC. Table and partition names reach EXECUTE only through format('%I'), and only
-- from tabelas_por_dia() or from the catalog.

-- The tables partitioned by day and the column each is partitioned by.
CREATE FUNCTION tabelas_por_dia(OUT tabela text, OUT coluna text) RETURNS SETOF record
LANGUAGE sql IMMUTABLE AS $$
  VALUES ('request_log', 'created_at'), ('outbox_archive', 'encerrado_em'), ('deliveries_archive', 'encerrado_em'),
         ('delivery_attempts_archive', 'encerrado_em')
$$;

-- The partition of p_tabela for the day p_dia, made if it is missing; true when this call made it.
-- Rows the default partition took for that day (its partition came late) move into it first, so
-- the default partition stays empty in the normal course. Concurrent callers (two workers, the
-- release) take turns on a lock of the partition's own.
CREATE FUNCTION particao_do_dia(p_tabela text, p_dia date) RETURNS boolean
LANGUAGE plpgsql AS $$
DECLARE
  v_coluna text := (SELECT t.coluna FROM tabelas_por_dia() t WHERE t.tabela = p_tabela);
  -- Partitions live in their table's schema, whatever the session's search_path.
  v_esquema text := (SELECT n.nspname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = p_tabela::regclass);
  v_nome text := p_tabela || '_' || to_char(p_dia, 'YYYYMMDD');
  v_de timestamptz := p_dia::timestamp AT TIME ZONE 'UTC';
  v_ate timestamptz := (p_dia + 1)::timestamp AT TIME ZONE 'UTC';
BEGIN
  IF v_coluna IS NULL THEN
    RAISE EXCEPTION 'particao_do_dia: % is not partitioned by day', p_tabela USING ERRCODE = 'invalid_parameter_value';
  END IF;
  PERFORM pg_advisory_xact_lock(hashtextextended('particao_do_dia:' || v_nome, 0));
  IF to_regclass(format('%I.%I', v_esquema, v_nome)) IS NOT NULL THEN
    RETURN false;
  END IF;
  EXECUTE format('CREATE TABLE %I.%I (LIKE %I.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', v_esquema, v_nome, v_esquema, p_tabela);
  EXECUTE format('WITH movidas AS (DELETE FROM %I.%I WHERE %I >= $1 AND %I < $2 RETURNING *) INSERT INTO %I.%I SELECT * FROM movidas',
                 v_esquema, p_tabela || '_padrao', v_coluna, v_coluna, v_esquema, v_nome) USING v_de, v_ate;
  -- Attaching checks that the default partition holds no row of the day: it was just emptied of
  -- them, and it is empty in the normal course, so the check reads nothing.
  EXECUTE format('ALTER TABLE %I.%I ATTACH PARTITION %I.%I FOR VALUES FROM (%L) TO (%L)', v_esquema, p_tabela, v_esquema, v_nome, v_de, v_ate);
  RETURN true;
END $$;

-- Every table's partitions from today (UTC) to p_dias days ahead; how many this call made.
CREATE FUNCTION particoes_garantir(p_dias int) RETURNS int
LANGUAGE plpgsql AS $$
DECLARE
  v_hoje date := (now() AT TIME ZONE 'UTC')::date;
  v_feitas int := 0;
  t record;
BEGIN
  FOR t IN SELECT * FROM tabelas_por_dia() LOOP
    FOR d IN 0 .. p_dias LOOP
      IF particao_do_dia(t.tabela, v_hoje + d) THEN
        v_feitas := v_feitas + 1;
      END IF;
    END LOOP;
  END LOOP;
  RETURN v_feitas;
END $$;

-- Drops the partitions of p_tabela whose whole day ended before p_antes (their rows all past the
-- retention): the names of those dropped. Each drop takes the parent's lock for an instant;
-- lock_timeout, set by the caller, keeps it from queueing behind a long transaction (the next run
-- takes what this one could not). Callers at once (two workers) take turns on a lock of the table's
-- own, so each partition is dropped by one of them and the other finds it gone.
CREATE FUNCTION particoes_expiradas_remover(p_tabela text, p_antes timestamptz) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
  v_removidas text[] := '{}'::text[];
  p record;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('particoes_expiradas_remover:' || p_tabela, 0));
  FOR p IN
    SELECT n.nspname, c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE i.inhparent = p_tabela::regclass AND c.relname ~ ('^' || p_tabela || '_[0-9]{8}$')
       AND (to_date(right(c.relname, 8), 'YYYYMMDD') + 1)::timestamp AT TIME ZONE 'UTC' <= p_antes
     ORDER BY c.relname
  LOOP
    EXECUTE format('DROP TABLE %I.%I', p.nspname, p.relname);
    v_removidas := v_removidas || p.relname::text;
  END LOOP;
  RETURN v_removidas;
END $$;
