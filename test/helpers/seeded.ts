// Seeded fast-check runs of the property and model suites: a failure prints its seed and path, and
// FUZZ_SEED and FUZZ_PATH replay it; the suite's own variable (FUZZ_RUNS, MODEL_RUNS) sets how many
// runs.
export function seededRuns(runsVariable: string, defaultRuns: number) {
  const runs = Number(process.env[runsVariable] ?? defaultRuns);
  const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
  const path = process.env.FUZZ_PATH;
  if (seed !== undefined) process.stdout.write(`replaying seed ${seed}${path ? ` path ${path}` : ''}\n`);
  return {
    /** The default runs from a fresh seed: a short replay need not reach every case a suite checks for. */
    full: runs >= defaultRuns && seed === undefined,
    /** fast-check's parameters for fc.assert. */
    parameters: { numRuns: runs, ...(seed !== undefined ? { seed } : {}), ...(path ? { path } : {}), includeErrorInReport: true },
  };
}
