-- Delivery attempts are recorded before their request goes out and completed after it (issue 20):
-- an attempt whose worker died between the two keeps no outcome, and shows as interrupted. Its
-- request may have reached the receiver, so it is never left out of the log.
ALTER TABLE delivery_attempts
  ALTER COLUMN duration_ms DROP NOT NULL,
  ALTER COLUMN succeeded DROP NOT NULL;
-- An attempt either has its whole outcome or none of it. NOT VALID first, so that the check of the
-- existing rows (VALIDATE) does not hold the table's exclusive lock while it reads them.
ALTER TABLE delivery_attempts
  ADD CONSTRAINT delivery_attempts_outcome CHECK ((duration_ms IS NULL) = (succeeded IS NULL)) NOT VALID;
ALTER TABLE delivery_attempts VALIDATE CONSTRAINT delivery_attempts_outcome;
