// Shared pieces of the benchmarks: the machine they ran on, and writing a section of
// BENCHMARKS.md between markers so each benchmark replaces only its own figures.
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { projectRoot } from '../shared/config.ts';

const FILE = path.join(projectRoot, 'BENCHMARKS.md');

export function machine(): string {
  const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
  return `${os.cpus().length} × ${cpu}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ${os.type()} ${os.release()}, Node ${process.version}`;
}

export async function writeSection(name: string, markdown: string): Promise<void> {
  const begin = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  let text = await readFile(FILE, 'utf8').catch(() => '# Benchmarks\n\nFigures written by `npm run bench`; each section says when and where it ran.\n');
  const block = `${begin}\n${markdown.trim()}\n\n_Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC on ${machine()}._\n${end}`;
  const start = text.indexOf(begin);
  const stop = text.indexOf(end);
  text = start >= 0 && stop > start ? text.slice(0, start) + block + text.slice(stop + end.length) : `${text.trimEnd()}\n\n${block}\n`;
  await writeFile(FILE, text);
}

export const percentile = (sorted: number[], p: number) =>
  sorted.length ? (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0) : 0;
