// The one place Node code reads the time. Tests move it instead of sleeping; the database's own
// now() is moved by backdating rows.
let offsetMs = 0;

export const clock = {
  now(): Date {
    return new Date(Date.now() + offsetMs);
  },
  nowMs(): number {
    return Date.now() + offsetMs;
  },
  /** Tests only: shift the clock forward (or back) by ms. */
  advance(ms: number): void {
    offsetMs += ms;
  },
  reset(): void {
    offsetMs = 0;
  },
};
