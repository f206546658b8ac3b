// A logger whose JSON lines a suite can read: what the service logged, parsed, in order.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '#shared/log.ts';

export function capturedLog(level = 'info'): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      callback();
    },
  });
  return { log: createLogger(level as Parameters<typeof createLogger>[0], 'test', sink), lines };
}
