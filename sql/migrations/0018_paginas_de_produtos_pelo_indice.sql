-- A page of GET /produtos reads its products' ids, versions and sort values only (the web process
-- holds most documents already, api/routes/document-cache.ts): with the version in the list's indexes, a
-- page is an index-only scan of a few buffers in the list's order, where it read a hundred heap
-- pages of ~3 KB rows and sorted them (EXPLAIN in BENCHMARKS.md, "Stock movements and the
-- catalog"). No update loses a HOT update it had: every write of a product moves its atualizado_em,
-- already indexed by produtos_atualizado. Built in the release's transaction like every migration:
-- writes of products wait for the two builds (a catalog is thousands of rows, not millions).
DROP INDEX produtos_criado;
CREATE INDEX produtos_criado ON produtos (conta_id, criado_em, id) INCLUDE (row_version);
DROP INDEX produtos_atualizado;
CREATE INDEX produtos_atualizado ON produtos (conta_id, atualizado_em, id) INCLUDE (row_version);
