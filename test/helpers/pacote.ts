// The official client as npm publishes it: client/ copied to a folder of the suite's own (suites
// run two at a time and must not build into the same dist/), packed with `npm pack` (whose prepack
// script compiles src/ to dist/ with tsc), and unpacked into a consumer's node_modules with its
// `printfarm` command linked, as `npm install @printfarm/api` leaves it. The consumer folder sits
// inside the project, so the package's one dependency (openapi-fetch) resolves from the project's.
import { execFile } from 'node:child_process';
import { chmod, cp, mkdir, symlink } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '#shared/config.ts';

const run = promisify(execFile);
export const CLIENTE_DIR = path.join(projectRoot, 'client');
const PUBLICADOS = ['package.json', 'tsconfig.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'src'];

export type Pacote = { tarball: string; arquivos: string[]; nome: string; versao: string };

/** Packs client/ in `dir`: the tarball and the files it holds. */
export async function empacotarCliente(dir: string): Promise<Pacote> {
  const fonte = path.join(dir, 'fonte');
  await mkdir(fonte, { recursive: true });
  for (const item of PUBLICADOS) await cp(path.join(CLIENTE_DIR, item), path.join(fonte, item), { recursive: true });
  // The project's Node and binaries (tsc) first, as under npm test; no registry is asked anything.
  const env = { ...process.env, PATH: `${path.dirname(process.execPath)}:${path.join(projectRoot, 'node_modules', '.bin')}:${process.env.PATH ?? ''}`, npm_config_offline: 'true' };
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', dir], { cwd: fonte, env });
  // The prepack script's own lines come first.
  const [info] = JSON.parse(stdout.slice(stdout.indexOf('\n[') + 1)) as { filename: string; name: string; version: string; files: { path: string }[] }[];
  if (!info) throw new Error(`npm pack printed no result: ${stdout}`);
  return { tarball: path.join(dir, info.filename), arquivos: info.files.map((f) => f.path).sort(), nome: info.name, versao: info.version };
}

/** Unpacks the tarball into `consumidor`/node_modules/@printfarm/api and links its command in node_modules/.bin. */
export async function instalarCliente(consumidor: string, pacote: Pacote): Promise<void> {
  const destino = path.join(consumidor, 'node_modules', ...pacote.nome.split('/'));
  await mkdir(destino, { recursive: true });
  await run('tar', ['xzf', pacote.tarball, '--strip-components=1', '-C', destino]);
  const cli = path.join(destino, 'dist', 'cli.js');
  await chmod(cli, 0o755);
  await mkdir(path.join(consumidor, 'node_modules', '.bin'), { recursive: true });
  await symlink(path.relative(path.join(consumidor, 'node_modules', '.bin'), cli), path.join(consumidor, 'node_modules', '.bin', 'printfarm'));
}
