// `npm run ops -- status`: one screen for an operator, from SQL alone (ops/status/).
import { z } from 'zod';
import { defineCommand, type Command } from '../command.ts';
import { readSnapshot } from '../status/snapshot.ts';
import { renderStatus, watchStatus } from '../status/render.ts';

export const statusCommands: Command[] = [
  defineCommand({
    name: 'status',
    summary: 'One screen: requests and refusals per minute, queues, deliveries by outcome, endpoints failing, keys suspended or near a ceiling. --watch redraws it; --json prints it for scripts.',
    options: z.object({
      json: z.boolean().optional(),
      watch: z.boolean().optional(),
      intervalo: z.coerce.number().int().min(1).max(3_600).default(5).describe('seconds between screens with --watch'),
    }),
    run: async (o, { pool, out, write, signal }) => {
      if (o.json) return out(await readSnapshot(pool));
      if (!o.watch) return write(renderStatus(await readSnapshot(pool)));
      await watchStatus(() => readSnapshot(pool), write, { intervalMs: o.intervalo * 1_000, signal });
    },
  }),
];
