-- One language per concept (docs/decisions/0047-rooms-short-functions-one-language.md): what is
-- infrastructure is named in English, like the deliveries and the hourly delivery counter (0022);
-- the contract's nouns keep theirs. A rename takes a moment's lock and moves no row.

-- The refused items of a refused batch kept with its Idempotency-Key (0009), and the claim that
-- hands them back. The body's field stays `recusas` (contract).
ALTER TABLE idempotency_keys RENAME COLUMN recusas TO refusals;
ALTER TYPE api_write_claim RENAME ATTRIBUTE recusas TO refusals;
