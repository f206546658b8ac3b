// Names of the pg-boss queues that more than one process uses.
export const QUEUES = {
  liftSuspension: 'lift-suspension',
} as const;
