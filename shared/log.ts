// One JSON line per event on stdout (pino); the level comes from LOG_LEVEL. Errors are logged as
// describeError says (shared/errors.ts): never a statement, its values or a request body.
import { pino, type Logger } from 'pino';
import { describeError } from './errors.ts';

export type { Logger };

/** destination: stdout unless given (tests read the lines). */
export function createLogger(level: string, name: string, destination?: pino.DestinationStream): Logger {
  const options = { level, name, base: { pid: process.pid }, timestamp: pino.stdTimeFunctions.isoTime, serializers: { err: describeError } };
  return destination ? pino(options, destination) : pino(options);
}
