// CPU time per request, by process, read from /proc over a measured run: which of the server, the
// database (and Redis) and the load generator the work went to. Linux only; elsewhere it reports nothing.
import { readdirSync, readFileSync } from 'node:fs';

type Sample = Map<number, { label: string; ticks: number }>;
const TICKS_PER_SECOND = 100;

function labelOf(pid: number, ppid: number, cmdline: string, servers: Map<number, string>, databases: Set<number>): string | null {
  if (pid === process.pid) return 'load generator (autocannon)';
  const server = servers.get(pid);
  if (server) return server;
  // Only the benchmark's own server when its postmaster is known: another PostgreSQL on the machine
  // (someone's test suites) is someone else's work.
  const ours = databases.size === 0 || databases.has(pid) || databases.has(ppid);
  if ((cmdline.startsWith('postgres:') || /\/postgres(\s|$)/.test(cmdline)) && ours) return 'PostgreSQL';
  // A store some baselines keep their rate limits in (bench/reads.bench.ts); idle in the others.
  if (/(^|\/)redis-server(\s|$)/.test(cmdline)) return 'Redis';
  return null;
}

/** The fields of /proc/<pid>/stat after the command's name: state, parent's pid, … */
function statOf(pid: number): string[] {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The postmaster of the PostgreSQL a backend of `backendPid` belongs to, or null when it is not on this machine. */
export function postmasterOf(backendPid: number): number | null {
  try {
    // A server elsewhere: the same pid here is some other process.
    if (!readFileSync(`/proc/${backendPid}/cmdline`, 'utf8').startsWith('postgres')) return null;
    return Number(statOf(backendPid)[1]);
  } catch {
    return null;
  }
}

/** Ticks (user + system) of the processes we care about; PostgreSQL's only under `databases` when it names any. */
export function sampleCpu(servers: Map<number, string>, databases: Set<number> = new Set()): Sample {
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
      const fields = statOf(pid);
      const label = labelOf(pid, Number(fields[1]), cmdline, servers, databases);
      if (!label) continue;
      // Its own time and that of its children already reaped: a database connection closed during
      // the run leaves its time with the postmaster.
      sample.set(pid, { label, ticks: Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]) });
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return sample;
}

/**
 * µs of CPU per request of the processes labelled `label` between two samples, by what `roleOf`
 * calls each (a process it does not know, or one that ended and left its time with its parent,
 * goes under `otherwise`).
 */
export function cpuPerRequestByRole(
  before: Sample, after: Sample, requests: number, label: string, roleOf: (pid: number) => string | undefined, otherwise: string,
): Record<string, number> {
  const ticks: Record<string, number> = {};
  for (const [pid, { label: l, ticks: t }] of after) {
    if (l !== label) continue;
    const role = roleOf(pid) ?? otherwise;
    ticks[role] = (ticks[role] ?? 0) + t - (before.get(pid)?.ticks ?? 0);
  }
  return Object.fromEntries(Object.entries(ticks).filter(([, t]) => t > 0)
    .map(([role, t]) => [role, Math.round((t / TICKS_PER_SECOND) * 1e6 / Math.max(1, requests))]));
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

/** Busy and total ticks of the whole machine, all CPUs (the first line of /proc/stat). */
export function sampleMachine(): { busy: number; total: number } {
  try {
    const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0]?.split(/\s+/).slice(1, 9).map(Number) ?? [];
    const [user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0] = ticks;
    const busy = user + nice + system + irq + softirq + steal;
    return { busy, total: busy + idle + iowait };
  } catch {
    return { busy: 0, total: 0 };
  }
}

/**
 * The share of the machine's CPU (0–1) that went to processes no label names between two samples:
 * other work on a shared machine, which slows a run down without showing in its CPU per request.
 */
export function othersShare(before: Sample, after: Sample, machineBefore: { busy: number; total: number }, machineAfter: { busy: number; total: number }): number {
  const sum = (sample: Sample) => [...sample.values()].reduce((total, { ticks }) => total + ticks, 0);
  const total = machineAfter.total - machineBefore.total;
  return total > 0 ? Math.max(0, (machineAfter.busy - machineBefore.busy - (sum(after) - sum(before))) / total) : 0;
}
