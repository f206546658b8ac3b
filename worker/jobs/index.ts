// Every job the worker runs.
import { requestLogRetention } from './retention.ts';
import type { AnyJob } from './types.ts';

export const jobs: readonly AnyJob[] = [requestLogRetention];
