// Conditional lists: every page of a list carries an ETag (its content's), and an If-None-Match
// that names it is a 304 at the price of contract §8.2 (1 in the burst, 0 in the month), so a poller that
// finds nothing new pays nothing against its month. The page is known only once read, so a list GET
// with If-None-Match is admitted as a repetition (repetition.ts); when its page changed, the rest of
// its price is charged before it is answered, and a ceiling that refuses the rest makes it a 429.
import type { Request } from 'restify';
import { topUp } from '../admission/admission.ts';
import { jsonBytes } from './compression.ts';
import type { Cost } from '../admission/cost.ts';
import { etagForPage, ifNoneMatchMatches } from './etag.ts';
import type { RequestState } from './request-state.ts';
import type { AnyRoute, Deps, JsonBody, Reply } from '../routes/types.ts';

export const isConditionalList = (route: AnyRoute) => !!route.conditional && 'lista' in route.conditional;

export async function conditionalPage(deps: Deps, req: Request, route: AnyRoute, cost: Cost, state: RequestState, reply: Reply): Promise<Reply> {
  if (reply.status !== 200) return reply;
  // Serialized once (or already, by PostgreSQL) and encoded once: the reply sends the same bytes
  // the tag is made of, unless the route knows the tag from its rows' versions (a catalog page,
  // hundreds of KB) and the bytes need no hashing.
  let json: JsonBody = reply.json ?? JSON.stringify(reply.body);
  let etag = reply.etag;
  if (etag === undefined) {
    const bytes = jsonBytes(json);
    json = bytes;
    etag = etagForPage(bytes);
  }
  const headers = { ...reply.headers, ETag: etag };
  if (ifNoneMatchMatches(req.headers['if-none-match'], etag)) return { status: 304, headers, billing: 'not_modified' };
  if (state.charge?.repeticao) {
    const whole = await topUp(deps.admissions, req.headers.authorization, route, cost);
    Object.assign(state.headers, whole.headers);
    if (!whole.ok) {
      state.refusedBy = whole.reason;
      throw whole.error;
    }
    state.charge = whole.charge;
    state.cost = whole.charge.month;
  }
  return { ...reply, headers, json };
}
