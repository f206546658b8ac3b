// A figure measured in several runs, as the benchmarks' tables show it: its median and its spread.

export const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
export const median = (xs: number[]) => sorted(xs)[Math.floor((xs.length - 1) / 2)] ?? 0;
export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
/** "2,410 (2,300–2,520)", or the single figure of a row run once. */
export function spread(xs: number[], digits = 0): string {
  if (xs.length === 0) return '';
  const s = sorted(xs);
  if (s.length === 1) return fmt(s[0] ?? 0, digits);
  return `${fmt(median(xs), digits)} (${fmt(s[0] ?? 0, digits)}–${fmt(s[s.length - 1] ?? 0, digits)})`;
}
