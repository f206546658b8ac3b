// A delivery of a throttled endpoint goes out at the time its take gave it (send_at:
// shared/db/throttle.ts), never before; one that could not go out soon enough after it is given back
// and takes a new time, so sends are never closer than the spacing allows, whichever workers send.
import { clock } from '#shared/clock.ts';
import type { TakenDelivery } from '#shared/db/deliveries.ts';
import { THROTTLE } from '#shared/db/throttle.ts';

const timeOf = (row: TakenDelivery) => (row.send_at === null ? null : Date.parse(row.send_at));

/** Resolves at the delivery's time (at once when it has none, or it is past). */
export function untilItsTime(row: TakenDelivery): Promise<void> {
  const at = timeOf(row);
  const wait = at === null ? 0 : at - clock.nowMs();
  return wait > 0 ? new Promise((resolve) => setTimeout(resolve, wait)) : Promise.resolve();
}

/** Too late for its time: sent now, it could fall in one second with the sends timed after it. */
export function lateForItsTime(row: TakenDelivery): boolean {
  const at = timeOf(row);
  return at !== null && clock.nowMs() > at + THROTTLE.lateMs;
}
