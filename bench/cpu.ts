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
      // Its own time and that of its children already reaped: a database connection closed during
      // the run leaves its time with the postmaster.
      sample.set(pid, { label, ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sample;
}

/** µs of CPU per request by label between two samples. */
export function cpuPerRequest(before: Sample, after: Sample, requests: number): Record<string, number> {
  // Totals by label, not differences by process: a process that ended between the samples has its
  // time in its parent's count of reaped children, and must not be counted twice.
  const totals = (sample: Sample) => {
    const byLabel: Record<string, number> = {};
    for (const { label, ticks } of sample.values()) byLabel[label] = (byLabel[label] ?? 0) + ticks;
    return byLabel;
  };
  const start = totals(before);
  return Object.fromEntries(Object.entries(totals(after))
    .map(([label, ticks]) => [label, ticks - (start[label] ?? 0)] as const)
    .filter(([, ticks]) => ticks > 0)
    .map(([label, ticks]) => [label, Math.round((ticks / TICKS_PER_SECOND) * 1e6 / Math.max(1, requests))]));
}
