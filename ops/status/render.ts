// The status screen as text: one section per question an operator asks, each per-minute series
// with its total for the window, its last minute and a small trend line.
import type { Snapshot, Series } from './snapshot.ts';

const BARS = '▁▂▃▄▅▆▇█';

/** A series as a line of bars, scaled to its own maximum (a blank minute is the lowest bar). */
export function sparkline(values: readonly number[]): string {
  const max = Math.max(0, ...values);
  return values.map((v) => (max === 0 ? BARS[0] : BARS[Math.min(BARS.length - 1, Math.floor((v / max) * (BARS.length - 1)))])).join('');
}

export function renderStatus(s: Snapshot): string {
  return [
    `status em ${s.at} (séries: os últimos ${s.minutes} minutos, o atual por último)`,
    '',
    section('Requisições por minuto, por classe de status', seriesLines(s.requests)),
    section('Recusas (401, 403, 429, 503) por código e limite', Object.entries(s.refusals).map(([codigo, n]) => `  ${pad(codigo, 24)} ${n}`)),
    section('Filas', s.queues.map((q) => `  ${pad(`${q.queue}/${q.state}`, 32)} ${pad(String(q.items), 8)} mais antigo há ${age(q.oldest_seconds)}`)),
    section('Tentativas de entrega por minuto, por resultado', seriesLines(s.deliveries)),
    section('Endpoints falhando ou desativados (último dia)', s.endpoints.map((e) => `  ${e.endpoint_id} ${e.estado} desde ${e.desde ?? '?'} ${e.url}`)),
    section('Chaves suspensas ou perto de um teto', s.keys.map((k) => `  ${pad(k.prefixo, 16)} ${pad(k.estado, 14)} ${k.detalhe}`)),
  ].join('\n');
}

function section(title: string, lines: string[]): string {
  return `${title}\n${lines.length ? lines.join('\n') : '  (nada)'}\n`;
}

function seriesLines(series: Series): string[] {
  return Object.entries(series).map(([classe, values]) => {
    const total = values.reduce((a, b) => a + b, 0);
    return `  ${pad(classe, 26)} ${sparkline(values)}  total ${pad(String(total), 7)} último minuto ${values.at(-1) ?? 0}`;
  });
}

function age(seconds: number | null): string {
  if (seconds === null) return '-';
  if (seconds < 120) return `${Math.round(seconds)} s`;
  if (seconds < 7_200) return `${Math.round(seconds / 60)} min`;
  return `${Math.round(seconds / 3_600)} h`;
}

const pad = (text: string, width: number) => text.padEnd(width);

/**
 * Redraws the screen every `intervalMs` (clearing it first) until `signal` aborts, or `rounds` screens
 * have been drawn when given.
 */
export async function watchStatus(
  read: () => Promise<Snapshot>,
  write: (text: string) => void,
  options: { intervalMs: number; signal?: AbortSignal; rounds?: number },
): Promise<void> {
  for (let round = 0; !options.signal?.aborted && (options.rounds === undefined || round < options.rounds); round++) {
    if (round > 0) await pause(options.intervalMs, options.signal);
    if (options.signal?.aborted) break;
    write(`\x1b[2J\x1b[H${renderStatus(await read())}`);
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => { clearTimeout(timer); resolve(); }, { once: true });
  });
}
