-- Deliveries become their own queue (issue 20, items 6 and 7; docs/decisions.md, Webhooks): a
-- worker takes due deliveries by giving each a lease (lease_id, a fresh token per take) and moving
-- next_attempt_at to the lease's end, and records the attempt's start in the same statement. While a
-- worker lives it renews its leases; when it dies they run out and the deliveries are due again.
-- pg-boss no longer carries one job per delivery: job_id, the fence of those jobs, is the lease's
-- token now, with the same rule (a delivery is acted on only while it names the token).
ALTER TABLE deliveries RENAME COLUMN job_id TO lease_id;
ALTER TABLE deliveries RENAME CONSTRAINT deliveries_check1 TO deliveries_lease_pending;

-- Due is due: a delivery under a lease is not due until the lease's end (its next_attempt_at).
DROP INDEX deliveries_due;
DROP INDEX deliveries_enqueued;
CREATE INDEX deliveries_due ON deliveries (next_attempt_at) WHERE status = 'pending';

-- Deliveries a pg-boss job was carrying run again at once under the new scheme; their jobs are left
-- to pg-boss's retention (the worker deletes the old queue at start).
UPDATE deliveries SET lease_id = NULL, next_attempt_at = least(next_attempt_at, now())
 WHERE status = 'pending' AND lease_id IS NOT NULL;
