// Findings of plpgsql_check (test/plpgsql-check.test.ts) that are accepted, each with its reason.
// Anything else it reports fails the suite, and so does an entry here that it no longer reports.
export type Accepted = { fn: string; message: string; reason: string };

export const ACCEPTED: readonly Accepted[] = [
  {
    fn: 'exigir_transicao',
    message: 'routine is marked as VOLATILE, should be IMMUTABLE',
    reason: 'It exists to raise. Declared IMMUTABLE, a call with constant arguments could be folded, and so raise, while a statement is planned rather than when it runs.',
  },
  {
    fn: 'evento_agrupado_atual',
    message: 'routine is marked as VOLATILE, should be STABLE',
    reason: 'The relay calls it after taking the group\'s lock: VOLATILE gives each of its statements a fresh snapshot, so it sees every change that joined the window and committed before the lock (a STABLE function would read with the relay statement\'s older snapshot and could miss one).',
  },
];
