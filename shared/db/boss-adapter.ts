// Runs pg-boss's own statements inside one of our slonik transactions (pg-boss's documented `db`
// option), so jobs are inserted and completed atomically with the rows they stand for: a delivery
// never exists without its job, nor a job without its delivery.
import type { Db as BossDatabase } from 'pg-boss';
import type { ValueExpression } from 'slonik';
import { sql, type Tx } from './pool.ts';

// slonik accepts only template literals, to keep application SQL parameterised. pg-boss's text is
// pg-boss's, with positional $n parameters; it is rebuilt as a template whose $n become bound
// values, so nothing is interpolated into the SQL text.
const templates = new Map<string, { strings: TemplateStringsArray; refs: number[] }>();

function template(text: string): { strings: TemplateStringsArray; refs: number[] } {
  let found = templates.get(text);
  if (!found) {
    const parts = text.split(/\$(\d+)(?!\d)/);
    const strings = parts.filter((_, i) => i % 2 === 0);
    const refs = parts.filter((_, i) => i % 2 === 1).map(Number);
    const raw = Object.freeze([...strings]);
    found = { strings: Object.freeze(Object.assign([...strings], { raw })) as unknown as TemplateStringsArray, refs };
    if (templates.size > 200) templates.clear();
    templates.set(text, found);
  }
  return found;
}

// pg-boss passes strings, numbers, booleans, null and arrays of ids or names; its SQL casts each
// array parameter itself (e.g. $2::uuid[]), so arrays travel as text[].
function bind(value: unknown): ValueExpression {
  if (value === undefined || value === null) return null;
  if (Array.isArray(value)) return sql.array(value.map((v) => String(v)), 'text');
  if (value instanceof Date) return sql.timestamp(value);
  if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return value;
  return JSON.stringify(value);
}

export function bossDb(tx: Tx): BossDatabase {
  return {
    async executeSql(text: string, values: unknown[] = []) {
      const { strings, refs } = template(text);
      const bound = refs.map((n) => bind(values[n - 1]));
      const result = await tx.query(sql.unsafe(strings, ...bound));
      return { rows: [...result.rows] };
    },
  };
}
