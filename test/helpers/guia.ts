// The integrator's guide (docs/guia/*.md) as the tests read it: its pages, the fenced blocks of
// each (a fence's info string is the language and name=value markers: ```ts trecho=lote), its
// tables, and how a snippet is run (bash, node, python3, php) in a folder of its own.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { GUIA_DIR } from '../../api/reference/guia.ts';
import { projectRoot } from '#shared/config.ts';

export type Pagina = { arquivo: string; markdown: string };
export type Bloco = { arquivo: string; linha: number; lang: string; marcas: Record<string, string>; codigo: string };
export type Tabela = { cabecalho: string[]; linhas: string[][] };

/** Languages of the snippets the tests run; every other fence is an example of data or output. */
export const LINGUAGENS_EXECUTADAS = ['sh', 'ts', 'python', 'php'] as const;

/**
 * Every snippet of the guide, by the suite that runs it. A snippet not listed here fails
 * test/guia.test.ts; each suite checks that it ran all of its own.
 */
export const TRECHOS: Record<string, 'guia-trechos' | 'guia-webhooks' | 'guia-cliente'> = {
  'saude': 'guia-trechos',
  'conta': 'guia-trechos',
  'produtos': 'guia-trechos',
  'primeira-escrita': 'guia-trechos',
  'gerar-tipos': 'guia-trechos',
  'cliente-tipado': 'guia-trechos',
  'cabecalhos-de-limite': 'guia-trechos',
  'retry-after': 'guia-trechos',
  'repeticao': 'guia-trechos',
  'escrita-segura': 'guia-trechos',
  'paginar': 'guia-trechos',
  'etag': 'guia-trechos',
  'head': 'guia-trechos',
  'movimento-por-sku': 'guia-trechos',
  'lote': 'guia-trechos',
  'movimentos-do-pedido': 'guia-trechos',
  'verificar-ts': 'guia-webhooks',
  'verificar-py': 'guia-webhooks',
  'verificar-php': 'guia-webhooks',
  'eventos-recentes': 'guia-webhooks',
  'tentativas': 'guia-webhooks',
  'reenviar': 'guia-webhooks',
  'recuperar': 'guia-webhooks',
  'receber-webhook': 'guia-cliente',
  'escutar': 'guia-cliente',
};

export async function paginas(): Promise<Pagina[]> {
  const arquivos = (await readdir(GUIA_DIR)).filter((f) => f.endsWith('.md')).sort();
  return Promise.all(arquivos.map(async (arquivo) => ({ arquivo, markdown: await readFile(path.join(GUIA_DIR, arquivo), 'utf8') })));
}

export function blocos(pagina: Pagina): Bloco[] {
  const found: Bloco[] = [];
  const lines = pagina.markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)(.*)$/.exec(lines[i] ?? '');
    if (!open) continue;
    const end = lines.findIndex((l, j) => j > i && l === '```');
    if (end < 0) throw new Error(`${pagina.arquivo}:${i + 1}: a fence that never closes`);
    // name=value markers, or a bare name (```json envelope).
    const marcas = Object.fromEntries((open[2] ?? '').trim().split(/\s+/).filter(Boolean).map((m) => [m.split('=')[0] ?? '', m.split('=').slice(1).join('=')]));
    found.push({ arquivo: pagina.arquivo, linha: i + 1, lang: open[1] ?? '', marcas, codigo: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  return found;
}

export async function todosOsBlocos(): Promise<Bloco[]> {
  return (await paginas()).flatMap(blocos);
}

/** The snippet named `nome` (a test fails when it is missing or named twice). */
export async function trecho(nome: string): Promise<Bloco> {
  const found = (await todosOsBlocos()).filter((b) => b.marcas.trecho === nome);
  if (found.length !== 1) throw new Error(`the guide has ${found.length} snippets named ${nome}`);
  return found[0] as Bloco;
}

/** The GitHub-flavoured tables of a page (outside fences), their cells trimmed. */
export function tabelas(markdown: string): Tabela[] {
  const semBlocos = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  const found: Tabela[] = [];
  let atual: string[][] = [];
  const cells = (line: string) => line.trim().replace(/^\||\|$/g, '').split('|').map((c) => c.trim());
  for (const line of [...semBlocos.split('\n'), '']) {
    if (line.trim().startsWith('|')) {
      atual.push(cells(line));
      continue;
    }
    if (atual.length >= 2) found.push({ cabecalho: atual[0] ?? [], linhas: atual.slice(2) });
    atual = [];
  }
  return found;
}

/** The table of a page whose header starts with these cells. */
export function tabela(markdown: string, ...cabecalho: string[]): Tabela {
  const found = tabelas(markdown).find((t) => cabecalho.every((c, i) => t.cabecalho[i] === c));
  if (!found) throw new Error(`no table with the header ${cabecalho.join(' | ')}`);
  return found;
}

/** A cell's text without the backticks of code spans. */
export const semCrase = (cell: string) => cell.replace(/`/g, '');

export type Saida = { code: number; stdout: string; stderr: string };

/** Runs a program with the snippet environment, feeding `input` on stdin. */
export function rodar(comando: string, args: string[], options: { cwd: string; env?: Record<string, string>; input?: string }): Promise<Saida> {
  return new Promise((resolve, reject) => {
    const child = spawn(comando, args, {
      cwd: options.cwd,
      // The project's Node (24) and its binaries first, as under npm test.
      env: { ...process.env, PATH: `${path.dirname(process.execPath)}:${path.join(projectRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`, ...options.env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(options.input ?? '');
  });
}

/** A program on the PATH, or null. */
export function programa(nome: string): string | null {
  for (const dir of (process.env.PATH ?? '').split(':')) {
    const candidate = path.join(dir, nome);
    if (dir && existsSync(candidate)) return candidate;
  }
  return null;
}

/**
 * A fresh folder for a suite's snippets, inside the project so that they import its packages, but
 * outside what `npm run typecheck` reads (.scratch/ is ignored by git too).
 */
export async function pastaDeTrechos(suite: string): Promise<string> {
  const dir = path.join(projectRoot, '.scratch', `${suite}-${process.pid}`);
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  return dir;
}

/** Writes the TypeScript files of a folder's snippets with a tsconfig and type-checks them with the project's. */
export async function verificarTipos(dir: string): Promise<Saida> {
  await writeFile(path.join(dir, 'tsconfig.json'), JSON.stringify({
    extends: path.relative(dir, path.join(projectRoot, 'tsconfig.json')),
    include: ['./*.ts'],
  }));
  return rodar(path.join(projectRoot, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], { cwd: dir });
}
