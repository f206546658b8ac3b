// What admission answers for one request (a line of api_admit's answer): the outcome and reason, the
// caller, every ceiling with what is left of it, for the headers, and the record it read, if any.
import { z } from 'zod';

/**
 * What the web process sends admission with a request that may be a repetition (api/http/repetition.ts;
 * sql/code/admission_rules.sql, admission_repeticao).
 */
export type Prova =
  | { chave: string; rota: string }
  | { tabela: string; id: string; versoes: number[] }
  | { provisoria: true };

/** A record a GET of one record asks admission to read with it (sql/code/representacoes.sql). */
export type RegistroPedido = { tabela: string; id: string };

/** A record read with the request (sql/code/representacoes.sql): its version and body, or null when the account has none. */
export type Registro = { versao: number; corpo: string } | null;

// A refusal carries only what it needs (a 401 nothing but its outcome): absent means null.
const maybe = <T extends z.ZodType>(type: T) => type.nullable().default(null);
const int = maybe(z.number().int());
export const AdmissionRow = z.object({
  outcome: z.enum(['ok', 'nao_autenticado', 'escopo_insuficiente', 'limite_excedido', 'indisponivel']),
  reason: maybe(z.string()),
  conta_id: maybe(z.string()),
  chave_id: maybe(z.string()),
  usuario_id: maybe(z.string()),
  plano_id: maybe(z.string()),
  permissoes: maybe(z.array(z.string())),
  slot_held: maybe(z.boolean()),
  retry_after: int,
  /** Admitted as a repetition: charged 1 in the burst and the reads' minute, 0 in the month. */
  repeticao: maybe(z.boolean()),
  suspended_until: maybe(z.string()),
  window_start: maybe(z.string()),
  mes: maybe(z.string()),
  rajada_q: int, rajada_w: int, rajada_r: int, rajada_t: int,
  minuto_q: int, minuto_r: int, minuto_t: int,
  mes_q: int, mes_r: int, mes_t: int,
  /** The record a GET of one record asked admission to read (null: the account has none); absent when none was asked. */
  registro: z.object({ versao: z.number().int(), corpo: z.string() }).nullable().optional(),
});
export type AdmissionRow = z.infer<typeof AdmissionRow>;

// The fields of one line of api_admit's answer, in their order (sql/code/admission_rules.sql,
// admission_answer): read by position, with no schema pass, since the database wrote them.
const TEXT_FIELDS = ['outcome', 'reason', 'conta_id', 'chave_id', 'usuario_id', 'plano_id'] as const;
const INT_FIELDS = [
  'rajada_q', 'rajada_w', 'rajada_r', 'rajada_t', 'minuto_q', 'minuto_r', 'minuto_t', 'mes_q', 'mes_r', 'mes_t',
] as const;

const intOrNull = (field: string | undefined) => (field ? Number(field) : null);

const FIELDS = 22;

/** One line of api_admit's answer as an admission row. */
export function admissionOf(line: string): AdmissionRow {
  // A record read with the request follows the fields: its version, then its body (JSON, which may
  // hold a "|"), the rest of the line.
  let end = -1;
  for (let n = 0; n <= FIELDS && end < line.length; n++) {
    end = line.indexOf('|', end + 1);
    if (end < 0) break;
  }
  const f = (end < 0 ? line : line.slice(0, end)).split('|');
  const row = { outcome: f[0] } as Record<string, unknown>;
  TEXT_FIELDS.forEach((name, i) => { if (i > 0) row[name] = f[i] || null; });
  row.permissoes = f.length > 6 ? (f[6] ? (f[6] as string).split(',') : []) : null;
  row.retry_after = intOrNull(f[7]);
  row.repeticao = f.length > 8 ? f[8] === 't' : null;
  const suspended = intOrNull(f[9]);
  row.suspended_until = suspended === null ? null : new Date(suspended).toISOString();
  const window = intOrNull(f[10]);
  row.window_start = window === null ? null : new Date(window * 1000).toISOString();
  row.mes = f[11] || null;
  INT_FIELDS.forEach((name, i) => { row[name] = intOrNull(f[12 + i]); });
  row.slot_held = row.outcome === 'ok' ? true : row.outcome === 'limite_excedido' ? false : null;
  if (end >= 0) {
    const versao = f[FIELDS];
    row.registro = versao ? { versao: Number(versao), corpo: line.slice(end + 1) } : null;
  }
  return row as AdmissionRow;
}

/** api_admit's answer, one row per request in their order. */
export function admissionsOf(text: string, expected: number): AdmissionRow[] {
  const rows = text === '' ? [] : text.split('\n').map(admissionOf);
  if (rows.length !== expected) throw new Error(`api_admit answered ${rows.length} admissions for ${expected} requests`);
  return rows;
}
