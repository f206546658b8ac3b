-- Per-endpoint throttle (docs/decisions/0044-per-endpoint-throttle.md): an endpoint may carry a
-- maximum of deliveries per second, set by the operator; none by default (no row). The workers give
-- each delivery they take of such an endpoint a time to go out, spaced from the last one given, in
-- the statement that takes it (shared/db/deliveries.ts): next_send_at is where the next one
-- goes, and the row's lock orders the workers that take at once.
CREATE TABLE webhook_throttles (
  conta_id uuid NOT NULL,
  endpoint_id uuid NOT NULL,
  per_second int NOT NULL CHECK (per_second BETWEEN 1 AND 1000),
  next_send_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (conta_id, endpoint_id),
  FOREIGN KEY (conta_id, endpoint_id) REFERENCES webhook_endpoints (conta_id, id) ON DELETE CASCADE
);
