-- The relay reads the outbox's pending events in seq order (shared/db/outbox.ts, relayOutbox). With
-- the index by (available_at, seq) it read every pending event and every entry its relayed events
-- left behind (a bitmap scan never marks an entry dead), then sorted them for the first few hundred:
-- a pass cost grew with the backlog and with what a drain left until the next VACUUM. In seq order,
-- with available_at in the key so a grouping window still open is skipped inside the index, a pass
-- stops after its batch, and the entries of relayed events it passes are marked dead as it goes.
CREATE INDEX outbox_a_relayar ON outbox (seq, available_at) WHERE relayed_at IS NULL;
DROP INDEX outbox_pending;
