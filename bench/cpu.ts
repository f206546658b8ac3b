// CPU time per request, by process, read from /proc over a measured run: which of the server, the
// database and the load generator the work went to. Linux only; elsewhere it reports nothing.
import { readdirSync, readFileSync } from 'node:fs';

type Sample = Map<number, { label: string; ticks: number }>;
const TICKS_PER_SECOND = 100;

function labelOf(pid: number, cmdline: string, servers: Map<number, string>): string | null {
  if (pid === process.pid) return 'load generator (autocannon)';
  const server = servers.get(pid);
  if (server) return server;
  if (cmdline.startsWith('postgres:') || /\/postgres(\s|$)/.test(cmdline)) return 'PostgreSQL';
  return null;
}

/** Ticks (user + system) of the processes we care about. */
export function sampleCpu(servers: Map<number, string>): Sample {
  const sample: Sample = new Map();
  let pids: string[] = [];
  try {
    pids = readdirSync('/proc').filter((d) => /^\d+$/.test(d));
  } catch {
    return sample;
  }
  for (const entry of pids) {
    const pid = Number(entry);
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ').trim();
      const label = labelOf(pid, cmdline, servers);
      if (!label) continue;
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      sample.set(pid, { label, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sample;
}

/** µs of CPU per request by label between two samples. */
export function cpuPerRequest(before: Sample, after: Sample, requests: number): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const [pid, { label, ticks }] of after) {
    const spent = ticks - (before.get(pid)?.ticks ?? 0);
    if (spent > 0) totals[label] = (totals[label] ?? 0) + spent;
  }
  return Object.fromEntries(
    Object.entries(totals).map(([label, ticks]) => [label, Math.round((ticks / TICKS_PER_SECOND) * 1e6 / Math.max(1, requests))]),
  );
}
