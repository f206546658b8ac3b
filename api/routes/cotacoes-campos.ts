// Field schemas shared by the quotation, production order and event routes (cotacoes.ts, pedidos.ts, eventos.ts).
import { z } from 'zod';

export const Id = z.uuid();
/** The path parameters of a route on one record: /…/{id}. */
export const PorId = z.object({ id: Id });
export const DataHora = z.iso.datetime({ offset: true });
export const Quantidade = z.number().int().min(1).max(99999);
export const Centavos = z.number().int().min(0).max(100_000_000_000);
export const NomeItem = z.string().trim().min(1).max(200);
export const Texto = z.string().max(2000);
