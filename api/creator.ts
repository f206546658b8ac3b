// A key holds what its creator holds, and a deactivated creator holds nothing: every route with a
// scope is 403 for their keys (docs/decisions/0007-keys-scopes-and-permissions.md). Admission
// refuses them through the route's permission (it reads a deactivated creator's permissions as
// none), which leaves the routes that need a scope but no fixed permission: the event log's, where
// each event needs its own type's. Until admission refuses a deactivated creator on every scoped
// route itself, this check does it for those routes, after admission and before validation, and
// gives back what admission charged, so the refusal costs what admission's own 403 costs: nothing.
import { usuarioAtivo } from '../shared/db/contas.ts';
import { escopoInsuficiente } from '../shared/errors.ts';
import type { Caller } from './caller.ts';
import type { RequestState } from './request-state.ts';
import type { AnyRoute, Deps } from './routes/types.ts';

export const CRIADOR_DESATIVADO = 'Quem criou a chave foi desativado no aplicativo: a chave não tem nenhuma permissão.';

/** Whether admission left this route's check of the creator to refuseDeactivatedCreator. */
export const needsCreatorCheck = (route: AnyRoute) => route.scope !== null && route.permission === null;

export async function refuseDeactivatedCreator(deps: Deps, caller: Caller, state: RequestState): Promise<void> {
  if (await usuarioAtivo(deps.pool, caller.contaId, caller.usuarioId)) return;
  state.billing = { units: 0 };
  throw escopoInsuficiente(CRIADOR_DESATIVADO);
}
