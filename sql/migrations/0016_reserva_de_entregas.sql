-- The hourly delivery cap is reserved in one statement per batch of accounts (issue 20: the worker
-- reserves at every take, and the reservation was three statements per account, a third of the
-- take's time at a steady rate): an upsert that adds what it grants to the hour's count and keeps
-- what it granted, which its RETURNING reads (reservar_entregas_webhook, sql/code/webhooks.sql).
ALTER TABLE webhook_uso_por_hora ADD COLUMN ultima_reserva int NOT NULL DEFAULT 0 CHECK (ultima_reserva >= 0);
