// The schema stays distributable by account (docs/scaling.md, issue 21 item 4): with Citus, every
// tenant table is distributed by conta_id and co-located, which needs conta_id first in every
// primary and unique key (a unique key must contain the distribution column) and in every foreign
// key between tenant tables (a foreign key between distributed tables must include it). The few
// tables and keys outside the rule are listed, each with its reason, in test/distribution.exceptions.ts.
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { z } from 'zod';
import { sql } from '#shared/db/pool.ts';
import { createTestDatabase, type TestDatabase } from './helpers/db.ts';
import { EXCEPTIONS } from './distribution.exceptions.ts';

const test = suite('the schema can be distributed by conta_id');
let db: TestDatabase;

test.before(async () => {
  db = await createTestDatabase();
});
test.after(() => db.close());

const Finding = z.object({ tabela: z.string(), chave: z.string().nullable(), problema: z.string() });

/** Every place the schema breaks the rule: a table without conta_id, a key not led by it, a foreign key without it. */
const findings = () => db.pool.any(sql.type(Finding)`
  WITH tables AS (
    SELECT c.oid, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  ), tenant AS (
    SELECT t.* FROM tables t
     WHERE EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = t.oid AND a.attname = 'conta_id' AND NOT a.attisdropped)
  ), col AS (
    SELECT attrelid, attnum, attname FROM pg_attribute WHERE attnum > 0 AND NOT attisdropped
  )
  SELECT t.relname AS tabela, NULL AS chave, 'sem conta_id' AS problema FROM tables t WHERE t.oid NOT IN (SELECT oid FROM tenant)
  UNION ALL
  SELECT t.relname, i.indexrelid::regclass::text, 'chave única sem conta_id na frente'
    FROM tenant t JOIN pg_index i ON i.indrelid = t.oid AND i.indisunique
    LEFT JOIN col ON col.attrelid = t.oid AND col.attnum = i.indkey[0]
   WHERE col.attname IS DISTINCT FROM 'conta_id'
  UNION ALL
  SELECT t.relname, f.conname, 'chave estrangeira entre tabelas de conta sem conta_id'
    FROM tenant t JOIN pg_constraint f ON f.conrelid = t.oid AND f.contype = 'f'
   WHERE f.confrelid IN (SELECT oid FROM tenant)
     AND NOT EXISTS (SELECT FROM unnest(f.conkey, f.confkey) AS k (de, para)
                       JOIN col a ON a.attrelid = f.conrelid AND a.attnum = k.de
                       JOIN col b ON b.attrelid = f.confrelid AND b.attnum = k.para
                      WHERE a.attname = 'conta_id' AND b.attname = 'conta_id')
   ORDER BY 1, 2`);

test('every tenant table keys and references by conta_id first, but for the listed exceptions', async () => {
  const found = await findings();
  const listed = (tabela: string, chave: string | null) => EXCEPTIONS.some((e) => e.table === tabela && (e.key ?? null) === chave);
  const unlisted = found.filter((f) => !listed(f.tabela, f.chave)).map((f) => `${f.tabela}${f.chave ? ` (${f.chave})` : ''}: ${f.problema}`);
  assert.equal(unlisted, [], 'fix these, or list them with the reason in test/distribution.exceptions.ts');
  const stale = EXCEPTIONS.filter((e) => !found.some((f) => f.tabela === e.table && f.chave === (e.key ?? null)))
    .map((e) => `${e.table}${e.key ? ` (${e.key})` : ''}`);
  assert.equal(stale, [], 'exceptions the schema no longer has: remove them');
});

test('the check finds what it looks for: a key without conta_id and a foreign key without it', async () => {
  await db.pool.query(sql.unsafe`CREATE TABLE pai (conta_id uuid NOT NULL, id uuid NOT NULL, PRIMARY KEY (conta_id, id), UNIQUE (id))`);
  await db.pool.query(sql.unsafe`CREATE TABLE filho (conta_id uuid NOT NULL, id uuid PRIMARY KEY, pai_id uuid REFERENCES pai (id))`);
  const found = (await findings()).filter((f) => f.tabela === 'pai' || f.tabela === 'filho');
  assert.equal(found.map((f) => [f.tabela, f.problema]), [
    ['filho', 'chave estrangeira entre tabelas de conta sem conta_id'],
    ['filho', 'chave única sem conta_id na frente'],
    ['pai', 'chave única sem conta_id na frente'],
  ]);
});

test.run();
