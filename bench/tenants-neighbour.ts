// The bad neighbour of bench/tenants.bench.ts, in a process of its own (its own event loop, so its
// flood does not delay the clock that times the well-behaved requests; autocannon does not run in a
// worker thread): most of its connections past every ceiling of its Bancada account, the rest
// sending hostile input from an account whose rates let it reach validation, and unparseable request lines
// on the side. Reads its orders as JSON on stdin, writes its figures as JSON on stdout.
import { text } from 'node:stream/consumers';
import { cannon, ceilingRequests, hostileRequests, malformedHttp, statsOf, type Neighbour } from './tenants-load.ts';

const { url, seconds, ceilingConnections, hostileConnections, neighbour } = JSON.parse(await text(process.stdin)) as {
  url: string; seconds: number; ceilingConnections: number; hostileConnections: number; neighbour: Neighbour;
};
const stopMalformed = malformedHttp(Number(new URL(url).port));
const [ceilings, hostile] = await Promise.all([
  cannon(url, { connections: ceilingConnections, seconds, next: ceilingRequests(neighbour) }),
  cannon(url, { connections: hostileConnections, seconds, next: hostileRequests(neighbour) }),
]);
stopMalformed();
process.stdout.write(JSON.stringify({ ceilings: statsOf(ceilings), hostile: statsOf(hostile) }));
