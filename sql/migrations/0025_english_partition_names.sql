-- One language per concept (docs/decisions/0048-english-infrastructure-names.md): the default
-- partitions of the tables partitioned by day, which hold a row whose day has no partition yet, are
-- named in English like their tables (they were <table>_padrao), and so are their indexes. The
-- functions that make and drop the day partitions are sql/code/partitions.sql (the module was
-- particoes.sql). A rename takes a moment's lock and moves no row.
ALTER TABLE request_log_padrao RENAME TO request_log_default;
ALTER INDEX request_log_padrao_pkey RENAME TO request_log_default_pkey;
ALTER INDEX request_log_padrao_created_at_idx RENAME TO request_log_default_created_at_idx;
ALTER INDEX request_log_padrao_conta_id_created_at_idx RENAME TO request_log_default_conta_id_created_at_idx;

ALTER TABLE outbox_archive_padrao RENAME TO outbox_archive_default;
ALTER INDEX outbox_archive_padrao_pkey RENAME TO outbox_archive_default_pkey;
ALTER INDEX outbox_archive_padrao_conta_id_criado_em_id_idx RENAME TO outbox_archive_default_conta_id_criado_em_id_idx;

ALTER TABLE deliveries_archive_padrao RENAME TO deliveries_archive_default;
ALTER INDEX deliveries_archive_padrao_pkey RENAME TO deliveries_archive_default_pkey;
ALTER INDEX deliveries_archive_padrao_completed_at_idx RENAME TO deliveries_archive_default_completed_at_idx;
ALTER INDEX deliveries_archive_padrao_conta_id_endpoint_id_created_at_idx RENAME TO deliveries_archive_default_conta_id_endpoint_id_created_at_idx;
ALTER INDEX deliveries_archive_padrao_conta_id_event_id_endpoint_id_idx RENAME TO deliveries_archive_default_conta_id_event_id_endpoint_id_idx;

ALTER TABLE delivery_attempts_archive_padrao RENAME TO delivery_attempts_archive_default;
ALTER INDEX delivery_attempts_archive_padrao_pkey RENAME TO delivery_attempts_archive_default_pkey;
ALTER INDEX delivery_attempts_archive_padrao_started_at_idx RENAME TO delivery_attempts_archive_default_started_at_idx;
