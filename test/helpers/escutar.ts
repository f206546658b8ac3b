// The client's command line as an integrator runs it: `node client/src/cli.ts <args>` in a process
// of its own, its output read line by line.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '#shared/config.ts';

export type Comando = {
  linhas: string[];
  /** Waits for a line matching `padrao` (and returns it), or fails after `timeoutMs`. */
  linha(padrao: RegExp, timeoutMs?: number): Promise<string>;
  /** SIGTERM, then the exit code. */
  parar(): Promise<number | null>;
  terminou: Promise<number | null>;
  processo: ChildProcess;
};

export function rodarCli(args: string[], options: { node?: string; cli?: string; env?: Record<string, string> } = {}): Comando {
  const cli = options.cli ?? path.join(projectRoot, 'client', 'src', 'cli.ts');
  const processo = spawn(options.node ?? process.execPath, [cli, ...args], { env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const linhas: string[] = [];
  let resto = '';
  const ouvir = (chunk: Buffer) => {
    const partes = (resto + chunk.toString()).split('\n');
    resto = partes.pop() ?? '';
    linhas.push(...partes);
  };
  processo.stdout?.on('data', ouvir);
  processo.stderr?.on('data', ouvir);
  const terminou = new Promise<number | null>((resolve) => processo.on('exit', (code) => {
    if (resto) linhas.push(resto);
    resolve(code);
  }));
  return {
    linhas,
    processo,
    terminou,
    async linha(padrao, timeoutMs = 15_000) {
      const limite = Date.now() + timeoutMs;
      for (;;) {
        const achada = linhas.find((l) => padrao.test(l));
        if (achada !== undefined) return achada;
        if (Date.now() > limite || processo.exitCode !== null) throw new Error(`no line matching ${padrao} in:\n${linhas.join('\n')}`);
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    async parar() {
      if (processo.exitCode === null) processo.kill('SIGTERM');
      return terminou;
    },
  };
}
