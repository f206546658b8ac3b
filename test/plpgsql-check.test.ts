// Every PL/pgSQL function of the release passes plpgsql_check (Debian: postgresql-15-plpgsql-check):
// no error, and every warning (performance, unused variables, types, security) fixed or accepted in
// test/plpgsql-check.accepted.ts with a reason. Trigger functions are checked against each table
// whose triggers run them, with the transition tables those triggers declare.
//
// Where it runs: on the suites' own server when the extension is available there; otherwise on the
// server PLPGSQL_CHECK_URL names (CI points it at its PostgreSQL 15 while the suites run on the
// embedded 18, which has no such package). Without either it says so and skips; with CI set it fails.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { installBossSchema } from '#shared/boss.ts';
import { CODE_SCHEMA, release } from '#shared/db/release.ts';
import { ACCEPTED } from './plpgsql-check.accepted.ts';
import { createTestDatabase } from './helpers/db.ts';
import { cannotRun } from './helpers/skip.ts';

const test = suite('plpgsql_check');
const INSTALL = 'install it with apt-get install postgresql-15-plpgsql-check, and run the suites on that server ' +
  '(DATABASE_URL) or point PLPGSQL_CHECK_URL at it';

type Target = { url: string; close(): Promise<void> };

async function hasExtension(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query("SELECT 1 FROM pg_available_extensions WHERE name = 'plpgsql_check'")).rowCount === 1;
  } finally {
    await client.end();
  }
}

/** A released database on a server that has the extension: the suites' own, or PLPGSQL_CHECK_URL's. */
async function findTarget(): Promise<Target | null> {
  if (await hasExtension(process.env.TEST_ADMIN_URL ?? '')) {
    const db = await createTestDatabase();
    await db.close();
    return { url: db.url, close: async () => undefined };
  }
  const server = process.env.PLPGSQL_CHECK_URL;
  if (!server || !(await hasExtension(server))) return null;
  const name = `pft_plpgsql_check_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: server });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  const url = new URL(server);
  url.pathname = `/${name}`;
  await release(url.toString());
  await installBossSchema(url.toString());
  return {
    url: url.toString(),
    async close() {
      await admin.query(`DROP DATABASE ${name} WITH (FORCE)`);
      await admin.end();
    },
  };
}

type Finding = { fn: string; on: string | null; level: string; message: string; line: number | null; statement: string | null };

async function findings(url: string): Promise<Finding[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query('CREATE EXTENSION IF NOT EXISTS plpgsql_check');
    const options = 'performance_warnings => true, extra_warnings => true, other_warnings => true, security_warnings => true';
    const { rows } = await client.query<Finding>(`
      WITH plpgsql AS (
        SELECT p.oid, p.proname::text AS fn, p.prorettype = 'trigger'::regtype AS is_trigger
          FROM pg_proc p JOIN pg_language l ON l.oid = p.prolang
         WHERE l.lanname = 'plpgsql' AND p.pronamespace IN (to_regnamespace($1), 'public'::regnamespace)),
      -- A trigger function, once per table whose triggers run it, with every transition table they
      -- declare (its branches by TG_OP read only the one their event provides).
      uses AS (
        SELECT t.tgfoid, t.tgrelid, max(t.tgoldtable) AS oldtable, max(t.tgnewtable) AS newtable
          FROM pg_trigger t WHERE NOT t.tgisinternal GROUP BY t.tgfoid, t.tgrelid)
      SELECT f.fn, NULL AS on, r.level, r.message, r.lineno AS line, r.statement
        FROM plpgsql f CROSS JOIN LATERAL plpgsql_check_function_tb(f.oid, ${options}) r
       WHERE NOT f.is_trigger
      UNION ALL
      SELECT f.fn, u.tgrelid::regclass::text, r.level, r.message, r.lineno, r.statement
        FROM plpgsql f JOIN uses u ON u.tgfoid = f.oid
        CROSS JOIN LATERAL plpgsql_check_function_tb(f.oid, u.tgrelid, oldtable => u.oldtable, newtable => u.newtable, ${options}) r
      UNION ALL
      SELECT f.fn, NULL, 'error', 'trigger function that no trigger runs', NULL, NULL
        FROM plpgsql f WHERE f.is_trigger AND NOT EXISTS (SELECT FROM uses u WHERE u.tgfoid = f.oid)
      ORDER BY 1, 2, 5`, [CODE_SCHEMA]);
    return rows;
  } finally {
    await client.end();
  }
}

const describe = (f: Finding) =>
  `${f.fn}${f.on ? ` on ${f.on}` : ''}: ${f.level}: ${f.message}${f.line ? ` (line ${f.line}, ${f.statement})` : ''}`;

const target = await findTarget();
if (!target) {
  const why = `plpgsql_check is not available on the suites' server${process.env.PLPGSQL_CHECK_URL ? ' nor at PLPGSQL_CHECK_URL' : ''}`;
  cannotRun(test, 'every PL/pgSQL function passes plpgsql_check', why, INSTALL);
} else {
  test.after(() => target.close());

  test('every PL/pgSQL function passes plpgsql_check, with only the accepted warnings', async () => {
    const all = await findings(target.url);
    const isAccepted = (f: Finding) => ACCEPTED.some((a) => a.fn === f.fn && a.message === f.message);
    assert.equal(all.filter((f) => !isAccepted(f)).map(describe), [], 'findings to fix or accept with a reason');
    const stale = ACCEPTED.filter((a) => !all.some((f) => f.fn === a.fn && f.message === a.message));
    assert.equal(stale.map((a) => `${a.fn}: ${a.message}`), [], 'accepted findings plpgsql_check no longer reports');
  });

  test('the check finds a planted error and an unused variable, so a clean result means something', async () => {
    const client = new pg.Client({ connectionString: target.url });
    await client.connect();
    try {
      await client.query(`CREATE FUNCTION ${CODE_SCHEMA}.plpgsql_check_probe_a() RETURNS int LANGUAGE plpgsql AS $$
        BEGIN RETURN (SELECT no_such_column FROM contas LIMIT 1); END $$`);
      await client.query(`CREATE FUNCTION ${CODE_SCHEMA}.plpgsql_check_probe_b() RETURNS int LANGUAGE plpgsql AS $$
        DECLARE v_unused int; BEGIN RETURN 1; END $$`);
      const probes = (await findings(target.url)).filter((f) => f.fn.startsWith('plpgsql_check_probe')).map(describe);
      for (const expected of ['plpgsql_check_probe_a: error: column "no_such_column" does not exist (line 2, RETURN)',
        'plpgsql_check_probe_b: warning: unused variable "v_unused" (line 2, DECLARE)']) {
        assert.ok(probes.includes(expected), `${expected} is among ${probes.join('; ')}`);
      }
    } finally {
      await client.query(`DROP FUNCTION IF EXISTS ${CODE_SCHEMA}.plpgsql_check_probe_a(), ${CODE_SCHEMA}.plpgsql_check_probe_b()`);
      await client.end();
    }
  });
}

test.run();
