// What `escutar` keeps between runs, in a JSON file: where it follows the event log from, the
// events it already forwarded, the pages of its last read (with their ETags, so that a restart
// asks with If-None-Match too) and the secret it signs with. Written whole to a temporary file and
// renamed over the old one, so a crash leaves one or the other, never half of one.
import { readFile, rename, writeFile } from 'node:fs/promises';

// One page of the last complete read of the log: the cursor that asked for it, its ETag and its next cursor.
export type Pagina = { cursor: string | null; etag: string; proximo: string | null };

export type Estado = {
  versao: 1;
  // The API and the key (its public prefix) the state belongs to.
  api: string;
  chave: string;
  segredo: string;
  // Events created before this instant are never forwarded (the first start, or --desde).
  piso: string;
  // The query's criado_desde: the log is read from here.
  janela: string;
  // The events already forwarded whose criado_em is at or after `janela`, by id.
  vistos: Record<string, string>;
  paginas: Pagina[];
};

export async function lerEstado(arquivo: string): Promise<Estado | null> {
  let texto: string;
  try {
    texto = await readFile(arquivo, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  const estado = JSON.parse(texto) as Partial<Estado>;
  if (estado.versao !== 1 || typeof estado.janela !== 'string' || typeof estado.piso !== 'string') {
    throw new Error(`${arquivo} não é um arquivo de estado do escutar; apague-o ou use --estado com outro arquivo.`);
  }
  return estado as Estado;
}

export async function gravarEstado(arquivo: string, estado: Estado): Promise<void> {
  const temporario = `${arquivo}.${process.pid}.tmp`;
  await writeFile(temporario, `${JSON.stringify(estado, null, 2)}\n`, { mode: 0o600 });
  await rename(temporario, arquivo);
}

// The public part of a key (chv_<prefix>), which tells keys apart without keeping the secret.
export const prefixoDaChave = (chave: string) => chave.split('_').slice(0, 2).join('_');
