// npm run bench: runs every bench/*.bench.ts (or those named on the command line) one after the
// other, each in its own process, each writing its section of BENCHMARKS.md.
import { spawnSync } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '#shared/config.ts';

const only = process.argv.slice(2);
const dir = path.join(projectRoot, 'bench');
const files = (await readdir(dir)).filter((f) => f.endsWith('.bench.ts') && (only.length === 0 || only.some((o) => f.includes(o)))).sort();
let failed = 0;
for (const file of files) {
  process.stdout.write(`\n== ${file}\n`);
  const result = spawnSync(process.execPath, [path.join(dir, file)], { stdio: 'inherit', cwd: projectRoot });
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
