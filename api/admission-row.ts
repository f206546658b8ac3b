// What admission answers for one request (api_admit_batch's json, one object per request): the
// outcome and reason, the caller, and every ceiling with what is left of it, for the headers.
import { z } from 'zod';

/**
 * What the web process sends admission with a request that may be a repetition (api/repetition.ts;
 * sql/code/admission_rules.sql, admission_repeticao).
 */
export type Prova =
  | { chave: string; rota: string }
  | { tabela: string; id: string; versoes: number[] }
  | { provisoria: true };

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
});
export type AdmissionRow = z.infer<typeof AdmissionRow>;
