-- Telemetry (docs/decisions/0049-opentelemetry.md) and the operator's screen.
--
-- An event carries the W3C trace context of the change that emitted it (set by the API's request
-- with set_config('app.traceparent', ..., true); emit_event keeps only a well-formed one), so the
-- worker's relay and each delivery attempt continue the request's trace. NULL when the change was
-- not traced (telemetry off, the application's screen, plain SQL). The outbox is a working table
-- kept small by the archive: the check reads it once, under its lock, in a moment.
ALTER TABLE outbox ADD COLUMN traceparent text
  CONSTRAINT outbox_traceparent_check CHECK (traceparent ~ '^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$');

-- Which rule refused a request at admission (the limit: rajada, minuto, mes, simultaneas; or the
-- access: escopo, permissao, chave_suspensa...), for refusals by limit without parsing messages.
-- NOT VALID: the request log is large and partitioned; new rows are checked, old ones have none.
ALTER TABLE request_log ADD COLUMN refused_by text;
ALTER TABLE request_log ADD CONSTRAINT request_log_refused_by_check CHECK (refused_by ~ '^[a-z_]{1,40}$') NOT VALID;
