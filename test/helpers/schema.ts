// What a database's schema is, as text two databases (or one, twice) can be compared by: pg_dump
// --schema-only when a pg_dump that can read this server is installed, and always a description
// read from the catalog (every table, column, constraint, index, type, function, view, trigger and
// comment), which needs no client binary.
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** A pg_dump able to dump this server (its major version at least the server's), or null. */
export async function findPgDump(url: string): Promise<string | null> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const major = Math.floor(Number((await client.query<{ v: string }>('SHOW server_version_num')).rows[0]?.v) / 10_000);
  await client.end();
  const root = '/usr/lib/postgresql';
  const installed = existsSync(root) ? readdirSync(root).map(Number).filter((v) => v >= major).sort((a, b) => a - b) : [];
  for (const version of installed) {
    const bin = `${root}/${version}/bin/pg_dump`;
    if (existsSync(bin)) return bin;
  }
  return null;
}

/** pg_dump --schema-only, without the random \restrict token newer pg_dumps print. */
export async function pgDumpSchema(pgDump: string, url: string): Promise<string> {
  const { stdout } = await run(pgDump, ['--schema-only', '--no-owner', '--no-privileges', url], { maxBuffer: 64 << 20 });
  return stdout.split('\n').filter((line) => !/^\\(un)?restrict /.test(line)).join('\n');
}

/** The schema as the catalog describes it, one sorted line per object. */
export async function catalogSchema(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ line: string }>(`
      WITH ns AS (SELECT oid FROM pg_namespace WHERE nspname IN ('public', 'code'))
      SELECT 'column ' || c.oid::regclass || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod)
             || CASE WHEN a.attnotnull THEN ' not null' ELSE '' END
             || coalesce(' default ' || pg_get_expr(d.adbin, d.adrelid), '') || ' ' || c.relkind::text || ' '
             || c.relpersistence::text || coalesce(' ' || array_to_string(c.reloptions, ','), '') AS line
        FROM pg_class c JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
        LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
       WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind IN ('r', 'v', 'c', 'p')
      UNION ALL
      SELECT 'constraint ' || conrelid::regclass || ' ' || conname || ' ' || pg_get_constraintdef(oid)
        FROM pg_constraint WHERE connamespace IN (SELECT oid FROM ns) AND conrelid <> 0
      UNION ALL
      SELECT 'index ' || pg_get_indexdef(indexrelid) FROM pg_index
       WHERE indrelid IN (SELECT oid FROM pg_class WHERE relnamespace IN (SELECT oid FROM ns))
      UNION ALL
      SELECT 'function ' || pg_get_functiondef(p.oid) FROM pg_proc p WHERE p.pronamespace IN (SELECT oid FROM ns)
      UNION ALL
      SELECT 'view ' || c.oid::regclass || ' ' || pg_get_viewdef(c.oid) FROM pg_class c
       WHERE c.relnamespace IN (SELECT oid FROM ns) AND c.relkind = 'v'
      UNION ALL
      SELECT 'trigger ' || pg_get_triggerdef(t.oid) FROM pg_trigger t
       WHERE NOT t.tgisinternal AND t.tgrelid IN (SELECT oid FROM pg_class WHERE relnamespace IN (SELECT oid FROM ns))
      UNION ALL
      SELECT 'comment ' || pg_describe_object(d.classoid, d.objoid, d.objsubid) || ' ' || d.description
        FROM pg_description d JOIN pg_class c ON d.classoid = 'pg_class'::regclass AND c.oid = d.objoid
       WHERE c.relnamespace IN (SELECT oid FROM ns)
      UNION ALL
      SELECT 'schema ' || nspname FROM pg_namespace WHERE oid IN (SELECT oid FROM ns)
      ORDER BY 1`);
    return rows.map((r) => r.line).join('\n');
  } finally {
    await client.end();
  }
}
