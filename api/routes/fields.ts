// Date and time values a client sends, checked to what PostgreSQL stores before any statement sees
// them: ISO 8601 as the contract says (zod checks the calendar: no 30 February, no hour 24), with a
// year from 0001, since PostgreSQL has no year 0000 and ISO's four digits stop at 9999.
import { z } from 'zod';

const semAnoZero = (value: string) => !value.startsWith('0000');
const ANO = 'o ano vai de 0001 a 9999';

export const Instante = z.iso.datetime({ offset: true }).refine(semAnoZero, ANO);
export const Dia = z.iso.date().refine(semAnoZero, ANO);

// External references of movements, quotations and production orders
// (docs/decisions/0031-external-references.md): the integrator's own id of the record, and
// Stripe-like metadata.
export const REFERENCIA_MAXIMA = 100;
export const METADADOS_CHAVES = 20;
export const METADADOS_CHAVE_MAXIMA = 40;
export const METADADOS_VALOR_MAXIMO = 500;
/** The whole object as JSON in UTF-8, so that the events carrying it stay well under 20 KB. */
export const METADADOS_BYTES = 8 * 1024;

export const ReferenciaExterna = z.string().min(1).max(REFERENCIA_MAXIMA)
  .describe(`O id deste registro no sistema do integrador (um pedido do marketplace, por exemplo), de 1 a ${REFERENCIA_MAXIMA} caracteres. ` +
    'Não é único: vários registros podem ter a mesma. Não guarde dados pessoais aqui.');

export const Metadados = z.record(z.string(), z.string().max(METADADOS_VALOR_MAXIMO))
  .superRefine((m, ctx) => {
    const chaves = Object.keys(m);
    const fora = chaves.find((k) => k.length < 1 || k.length > METADADOS_CHAVE_MAXIMA);
    if (fora !== undefined) ctx.addIssue({ code: 'custom', message: `cada chave tem de 1 a ${METADADOS_CHAVE_MAXIMA} caracteres ("${fora.slice(0, 50)}" não tem)` });
    else if (chaves.length > METADADOS_CHAVES) ctx.addIssue({ code: 'custom', message: `no máximo ${METADADOS_CHAVES} chaves` });
    else if (Buffer.byteLength(JSON.stringify(m)) > METADADOS_BYTES) ctx.addIssue({ code: 'custom', message: `no máximo ${METADADOS_BYTES} bytes em JSON (UTF-8)` });
  })
  .meta({ maxProperties: METADADOS_CHAVES, propertyNames: { type: 'string', minLength: 1, maxLength: METADADOS_CHAVE_MAXIMA } })
  .describe(`Pares chave-valor do integrador, guardados e devolvidos como vieram: até ${METADADOS_CHAVES} chaves de 1 a ` +
    `${METADADOS_CHAVE_MAXIMA} caracteres, cada valor um texto de até ${METADADOS_VALOR_MAXIMO} caracteres, ao todo até 8 KB em JSON. ` +
    'Não guarde dados pessoais aqui.');

/** The optional fields a request that creates one of those records accepts. */
export const referenciasNovas = { referencia_externa: ReferenciaExterna.optional(), metadados: Metadados.optional() };

/** The fields every read of one of those records shows. */
export const referenciasLidas = {
  referencia_externa: z.string().nullable().describe('O id deste registro no sistema do integrador; null quando não foi informado.'),
  metadados: z.record(z.string(), z.string()).describe('Os metadados do integrador; {} quando não foram informados.'),
};
