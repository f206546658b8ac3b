-- One language per concept: the hourly delivery counter is infrastructure, like the deliveries it
-- counts, and is named in English (it was webhook_uso_por_hora). A rename takes a moment's lock and
-- moves no row; its constraints and index follow the table's new name.
ALTER TABLE webhook_uso_por_hora RENAME TO webhook_hourly_usage;
ALTER TABLE webhook_hourly_usage RENAME COLUMN hora TO hour;
ALTER TABLE webhook_hourly_usage RENAME COLUMN entregas TO deliveries;
ALTER TABLE webhook_hourly_usage RENAME COLUMN ultima_reserva TO last_reserved;
ALTER TABLE webhook_hourly_usage RENAME CONSTRAINT webhook_uso_por_hora_pkey TO webhook_hourly_usage_pkey;
ALTER TABLE webhook_hourly_usage RENAME CONSTRAINT webhook_uso_por_hora_conta_id_fkey TO webhook_hourly_usage_conta_id_fkey;
ALTER TABLE webhook_hourly_usage RENAME CONSTRAINT webhook_uso_por_hora_hora_check TO webhook_hourly_usage_hour_check;
ALTER TABLE webhook_hourly_usage RENAME CONSTRAINT webhook_uso_por_hora_entregas_check TO webhook_hourly_usage_deliveries_check;
ALTER TABLE webhook_hourly_usage RENAME CONSTRAINT webhook_uso_por_hora_ultima_reserva_check TO webhook_hourly_usage_last_reserved_check;
