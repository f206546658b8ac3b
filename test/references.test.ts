// References between the repository's files resolve: a clone can follow every one. Read from every
// file git tracks (or would add), no database needed. It fails on:
// - a citation of a document outside the repository: the founding note's sections ("DESIGN" and
//   "§"), its files, a relative path up out of the project into its sibling shared folder, or one that does not exist;
// - a document that was removed: the notebook of decisions (now the records of docs/decisions/)
//   and the copy of the contract (now the integrator's guide);
// - a repository path (api/, worker/, shared/, sql/, ops/, test/, bench/, docs/ …) that names
//   nothing tracked, unless git ignores it (made by a command, like client/dist/);
// - a section named as `<file>, "<heading>"` (README, BENCHMARKS.md, CHANGELOG.md or a docs/ page)
//   whose file has no such heading (a BENCHMARKS.md heading may be named by its part before a colon
//   or a parenthesis: `BENCHMARKS.md, "Webhooks"`);
// - a Markdown link, or a `<path>.md#anchor`, to a file or heading that does not exist.
// The syntax is in the README, "References between documents".
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { projectRoot } from '#shared/config.ts';
import { cannotRun } from './helpers/skip.ts';

const test = suite('references');

// Written so that this file does not cite them itself.
const NOTE = (section: string) => ['DESIGN', section].join(' ');
const NOTEBOOK = ['docs/decisions', 'md'].join('.');
const CONTRACT_COPY = ['docs/api-v1', 'md'].join('.');

/**
 * Applied migrations are never edited: every database that ran one keeps its checksum, and the
 * release refuses a migration that changed (shared/db/release.ts). So the comments of these still
 * cite what was there when they were written; each entry says where that lives now, and the test
 * checks that it does. An entry the test no longer finds fails it, like a new frozen citation.
 */
const FROZEN: readonly { file: string; cites: string; now: readonly string[] }[] = [
  { file: 'sql/migrations/0009_referencias_e_historico.sql', cites: NOTEBOOK, now: ['docs/decisions/0031-external-references.md'] },
  { file: 'sql/migrations/0012_documentos_catalogo.sql', cites: NOTEBOOK, now: ['docs/decisions/0028-catalog-documents.md'] },
  { file: 'sql/migrations/0013_tipos_de_evento_plpgsql.sql', cites: NOTEBOOK, now: ['docs/decisions/0016-checks-on-hot-tables.md'] },
  { file: 'sql/migrations/0015_entregas_por_prazo.sql', cites: NOTEBOOK, now: ['docs/decisions/0034-deliveries-queue-under-leases.md'] },
  { file: 'sql/migrations/0017_arquivo_do_pipeline.sql', cites: NOTEBOOK, now: ['docs/decisions/0022-webhook-history-in-a-daily-archive.md'] },
  { file: 'sql/migrations/0014_request_log_por_dia.sql', cites: 'sql/code/particoes.sql', now: ['sql/code/partitions.sql'] },
];

const FOUNDING_NOTE = new RegExp(['DESIGN', '\\s*§\\s*\\d[\\d.]*(?:\\s*[-–,]\\s*§?\\d[\\d.]*)*'].join(''), 'g');
const FOUNDING_FILES = new RegExp(['\\b(?:DESIGN|STYLE)', '\\.md\\b|/work/', 'shared\\b'].join(''), 'g');
const REMOVED: Record<string, string> = {
  [NOTEBOOK]: 'removed: the decisions are records in docs/decisions/',
  [CONTRACT_COPY]: 'removed: the integrator\'s guide is docs/guia/',
};
const REMOVED_RE = new RegExp(Object.keys(REMOVED).map((p) => p.replace('.', '\\.')).join('|'), 'g');
const ROOTS = ['api', 'worker', 'shared', 'sql', 'ops', 'test', 'bench', 'docs', 'client'];
const REPO_PATH = new RegExp(`(?<![\\w./@~$-])(?:${ROOTS.join('|')})/(?:[\\w*.-]+/?)*`, 'g');
const RELATIVE_SHARED = /(?<![\w.])(?:\.\.\/)+shared\/[\w./-]*/g;
const SECTION = /(?<![\w/.-])(README(?:\.md)?|BENCHMARKS\.md|CHANGELOG\.md|docs\/[\w./-]+\.md)[,:]?\s+"([^"\n]+)"/g;
const MD_ANCHOR = /(?<![\w./-])((?:[\w.-]+\/)*[\w.-]+\.md)#([\p{L}\p{N}_-]+)/gu;
const MD_LINK = /\]\(([^)\s]+)\)/g;

type Problem = { file: string; line: number; text: string; why: string };

function listFiles(): string[] | null {
  try {
    const out = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: projectRoot, encoding: 'utf8' });
    return out.split('\0').filter((f) => f && existsSync(path.join(projectRoot, f)));
  } catch {
    return null;
  }
}

const files = listFiles();
const tracked = new Set(files ?? []);
const dirs = new Set<string>();
for (const f of tracked) for (let d = path.posix.dirname(f); d !== '.'; d = path.posix.dirname(d)) dirs.add(d);

function ignored(p: string): boolean {
  try {
    execFileSync('git', ['check-ignore', '-q', '--no-index', p], { cwd: projectRoot });
    return true;
  } catch {
    return false;
  }
}

/** Whether a repository path names a tracked file or folder (a glob: at least one file). */
function exists(p: string): boolean {
  const clean = p.replace(/\/+$/, '');
  if (clean.includes('*')) {
    const re = new RegExp(`^${clean.split('*').map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&')).join('[^/]*')}(/|$)`);
    return [...tracked].some((f) => re.test(f));
  }
  // A migration may be named by its number (sql/migrations/0001).
  const numbered = /^sql\/migrations\/\d{4}$/.test(clean) && [...tracked].some((f) => f.startsWith(`${clean}_`));
  return tracked.has(clean) || dirs.has(clean) || numbered || ignored(clean) || ignored(`${clean}/`);
}

const headingCache = new Map<string, string[] | null>();
/** The headings of a Markdown file of the repository, as text (null: no such file). */
function headings(file: string): string[] | null {
  if (!headingCache.has(file)) {
    const full = path.join(projectRoot, file);
    headingCache.set(file, tracked.has(file)
      ? readFileSync(full, 'utf8').split('\n').filter((l) => /^#{1,6} /.test(l)).map((l) => l.replace(/^#+\s*|\s*#*\s*$/g, '').replaceAll('`', ''))
      : null);
  }
  return headingCache.get(file) ?? null;
}

/** The names a heading answers to: itself, and its part before a colon or a parenthesis. */
const namesOf = (heading: string) => [heading, heading.split(/:\s|\s\(/)[0] ?? heading];

/** GitHub's anchors of a file's headings. */
function anchors(file: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const h of headings(file) ?? []) {
    const base = h.toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/**
 * What of a file is prose, where paths are named: all of a document, and the comments of code (the
 * strings of code are data: a test's made-up paths, a benchmark's report); the rest blanked, so
 * offsets and lines stay.
 */
function prose(file: string, source: string): string {
  const marker = /\.(ts|js|mjs)$/.test(file) ? '//' : file.endsWith('.sql') ? '--' : /(^|\/)(\.ci\/run|[\w-]+\.sh)$/.test(file) ? '#' : null;
  if (marker === null) return source;
  return source.split('\n').map((line) => {
    const t = line.trimStart();
    if (t.startsWith(marker) || (marker === '//' && (t.startsWith('*') || t.startsWith('/*')))) return line;
    const at = line.indexOf(` ${marker} `);
    return at < 0 ? ' '.repeat(line.length) : ' '.repeat(at) + line.slice(at);
  }).join('\n');
}

/**
 * The text with comment markers at the start of its lines folded into one space, so a reference
 * wrapped over two comment lines reads as one; with the line each character came from.
 */
function unwrapped(source: string): { text: string; lineAt: (offset: number) => number } {
  let text = '';
  const starts: number[] = [];
  source.split('\n').forEach((raw, i) => {
    const line = i === 0 ? raw : raw.replace(/^\s*(?:\/\/+|--|\*(?!\/)|#(?!#* ))?\s*/, ' ');
    starts.push(text.length);
    text += line;
  });
  return {
    text,
    lineAt(offset) {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if ((starts[mid] ?? 0) <= offset) lo = mid;
        else hi = mid - 1;
      }
      return lo + 1;
    },
  };
}

function problemsOf(file: string): Problem[] {
  const full = path.join(projectRoot, file);
  if (statSync(full).size > 2_000_000 || file === 'package-lock.json') return [];
  const source = readFileSync(full, 'utf8');
  return source.includes('\0') ? [] : problemsIn(file, source);
}

function problemsIn(file: string, source: string): Problem[] {
  const { text, lineAt } = unwrapped(source);
  const { text: prosa } = unwrapped(prose(file, source));
  const out: Problem[] = [];
  const add = (offset: number, found: string, why: string) => out.push({ file, line: lineAt(offset), text: found, why });

  for (const m of text.matchAll(FOUNDING_NOTE)) add(m.index, m[0], 'cites the founding design note, which is not in the repository');
  for (const m of text.matchAll(FOUNDING_FILES)) add(m.index, m[0], 'names a document outside the repository');
  for (const m of text.matchAll(REMOVED_RE)) add(m.index, m[0], REMOVED[m[0]] ?? 'removed');
  for (const m of text.matchAll(RELATIVE_SHARED)) {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), m[0]));
    if (target.startsWith('..') || !exists(target)) add(m.index, m[0], 'leaves the repository, or names nothing in it');
  }
  for (const m of prosa.matchAll(REPO_PATH)) {
    const p = m[0].replace(/[.-]+$/, '');
    if (!(p in REMOVED) && !exists(p)) add(m.index, p, 'no such file or folder in the repository');
  }
  for (const m of text.matchAll(SECTION)) {
    const target = (m[1] ?? '').startsWith('README') ? 'README.md' : (m[1] ?? '');
    const wanted = (m[2] ?? '').replace(/\s+/g, ' ').trim();
    if (target in REMOVED) continue;
    const hs = headings(target);
    if (hs === null) add(m.index, m[0], `${target} does not exist`);
    else if (!hs.some((h) => namesOf(h).includes(wanted))) add(m.index, m[0], `${target} has no heading "${wanted}"`);
  }
  for (const m of text.matchAll(MD_ANCHOR)) {
    const target = tracked.has(m[1] ?? '') ? (m[1] ?? '') : path.posix.normalize(path.posix.join(path.posix.dirname(file), m[1] ?? ''));
    if (!tracked.has(target)) continue; // the path check reports a missing file
    if (!anchors(target).has(m[2] ?? '')) add(m.index, m[0], `${target} has no heading with the anchor #${m[2]}`);
  }
  if (file.endsWith('.md')) {
    for (const m of text.matchAll(MD_LINK)) {
      const link = m[1] ?? '';
      if (/^[a-z][a-z0-9+.-]*:/i.test(link) || link.startsWith('/')) continue;
      const [target = '', anchor] = link.split('#');
      const resolved = target ? path.posix.normalize(path.posix.join(path.posix.dirname(file), target)) : file;
      if (resolved.startsWith('..') || !exists(resolved)) add(m.index, link, 'the link names nothing in the repository');
      else if (anchor && resolved.endsWith('.md') && !anchors(resolved).has(anchor)) add(m.index, link, `${resolved} has no heading with the anchor #${anchor}`);
    }
  }
  return out;
}

const frozen = (p: Problem) => FROZEN.some((f) => f.file === p.file && p.text.replace(/\s+/g, ' ') === f.cites);
const report = (problems: Problem[]) => problems.map((p) => `${p.file}:${p.line}: ${p.text} — ${p.why}`).join('\n');

if (files === null) {
  cannotRun(test, 'every reference names something in the repository', 'not a git checkout (git ls-files failed)', 'run the suites in a clone of the repository');
} else {
  const all = files.flatMap(problemsOf);

  test('every reference names something in the repository', () => {
    const left = all.filter((p) => !frozen(p));
    assert.ok(left.length === 0, `${left.length} references name nothing in the repository:\n${report(left)}`);
  });

  test('each frozen citation of an applied migration is still there, and says where it lives now', () => {
    for (const f of FROZEN) {
      assert.ok(all.some((p) => p.file === f.file && frozen(p) && p.text.replace(/\s+/g, ' ') === f.cites), `${f.file} no longer cites ${f.cites}: remove its entry`);
      for (const now of f.now) assert.ok(tracked.has(now), `${f.file}: ${now} does not exist`);
    }
  });
}

test('the checks find what they look for', () => {
  // Planted in a file that does not exist; each piece written so that this file does not hold it.
  const planted = [
    `// ${NOTE('§12')} and ../${'shared'}/${'DESIGN'}.md and ${NOTEBOOK}`,
    `// sql/code/${'nowhere'}.sql and sql/code/estoque.sql`,
    '// docs/design.md, ' + '"No such section" and ' + 'BENCHMARKS.md, ' + '"Webhooks"',
    '// docs/design.md' + '#no-such-anchor and docs/design.md' + '#nothing-is-lost',
  ].join('\n');
  const why = problemsIn('test/references-probe.ts', planted).map((p) => `${p.text}: ${p.why}`);
  const found = (part: string) => why.some((w) => w.includes(part));
  assert.ok(found('cites the founding design note'), 'a section of the founding note');
  assert.ok(found('names a document outside the repository'), 'a file of the founding note');
  assert.ok(found('removed: the decisions are records'), 'a removed document');
  assert.ok(found('nowhere.sql: no such file'), 'a missing path');
  assert.ok(found('has no heading "No such section"'), 'a missing section');
  assert.ok(found('#no-such-anchor'), 'a missing anchor');
  for (const good of ['estoque.sql', '"Webhooks"', '#nothing-is-lost']) assert.not.ok(found(good), `${good} exists: ${why.join('; ')}`);
});

test.run();
