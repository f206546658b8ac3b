// The route table: every endpoint of the API, in the order the OpenAPI document lists them.
import { listCanais } from './canais.ts';
import { rotasDoSistema } from './sistema.ts';
import type { AnyRoute } from './types.ts';

export const routes: readonly AnyRoute[] = [...rotasDoSistema, listCanais];
