// How long a worker holds the deliveries it takes (shared/db/deliveries.ts): a lease it renews while
// it lives, so a dead worker's deliveries are due again within LEASE_MS (SIGKILL, a lost machine),
// and a worker that stalls past its lease never sends what another may have taken since.
export const LEASE_MS = 10_000;
/** The dispatcher renews every held lease this often, in one statement. */
export const RENEW_EVERY_MS = 3_000;
/**
 * A delivery goes out only while its lease, by the worker's own clock from when the last take or
 * renewal that confirmed it was sent, has at least this long left: time for the request to start
 * before anyone else could take the delivery. Otherwise it is given back unsent.
 */
export const SEND_MARGIN_MS = 4_000;
