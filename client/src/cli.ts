#!/usr/bin/env node
// `printfarm`, the package's command line (npx @printfarm/api <comando>). One command, escutar
// (escutar.ts); what it prints is read by integrators, in Portuguese.
import { parseArgs } from 'node:util';
import { Printfarm } from './client.ts';
import { ErroDaApi } from './errors.ts';
import { escutar } from './escutar.ts';
import { lerEstado, gravarEstado, prefixoDaChave, type Estado } from './escutar-estado.ts';
import { VERSAO } from './versao.ts';
import { gerarSegredo } from './webhooks.ts';

const AJUDA = `printfarm ${VERSAO}: cliente oficial da API Printfarm

Uso:
  npx @printfarm/api escutar --chave chv_… --encaminhar http://localhost:3001/webhooks [opções]

escutar: acompanha o registro de eventos da conta (GET /eventos) e encaminha cada evento novo para
o endereço local, como uma entrega de webhook (mesmo corpo, cabeçalhos webhook-id, webhook-timestamp
e webhook-signature), assinado com um segredo local que ele mostra ao começar.

Opções:
  --api <url>           endereço base da API, terminado em /v1 (padrão: $PRINTFARM_API)
  --chave <chave>       chave de API com o escopo eventos:ler (padrão: $PRINTFARM_CHAVE)
  --encaminhar <url>    para onde encaminhar cada evento
  --segredo <whsec_…>   segredo para assinar (padrão: o do arquivo de estado, ou um novo)
  --estado <arquivo>    onde guardar de onde continuar (padrão: .printfarm-escutar.json)
  --intervalo <s>       segundos entre uma leitura e a seguinte (padrão: 5)
  --desde <instante>    recomeça a partir deste instante ISO 8601 (padrão: de onde parou, ou agora)
`;

async function principal(argv: string[]): Promise<number> {
  let lidos: ReturnType<typeof lerArgumentos>;
  try {
    lidos = lerArgumentos(argv);
  } catch {
    return saida(`Opção desconhecida ou sem valor: ${argv.join(' ')}\n\n${AJUDA}`, 64);
  }
  const { values, positionals } = lidos;
  if (values.versao) return saida(`${VERSAO}\n`, 0);
  if (values.ajuda || positionals[0] !== 'escutar') return saida(AJUDA, values.ajuda ? 0 : 64);
  const api = values.api ?? process.env.PRINTFARM_API;
  const chave = values.chave ?? process.env.PRINTFARM_CHAVE;
  const intervalo = Number(values.intervalo ?? 5);
  const desde = values.desde === undefined ? null : Date.parse(values.desde);
  if (!api || !chave || !values.encaminhar || !(intervalo > 0) || Number.isNaN(desde)) {
    return saida(`Faltam --api, --chave ou --encaminhar, ou --intervalo ou --desde são inválidos.\n\n${AJUDA}`, 64);
  }
  const cliente = new Printfarm({ urlBase: api, chave });
  const arquivo = values.estado ?? '.printfarm-escutar.json';
  const estado = await estadoInicial(cliente, arquivo, { api, chave, segredo: values.segredo, desde });
  await gravarEstado(arquivo, estado);
  const escrever = (linha: string) => process.stdout.write(`${linha}\n`);
  escrever(`Encaminhando os eventos da conta para ${values.encaminhar} (leitura a cada ${intervalo} s; estado em ${arquivo}).`);
  escrever(`Segredo para verificar as assinaturas: ${estado.segredo}`);
  escrever(`Eventos criados a partir de ${estado.piso}; Ctrl-C para parar.`);

  const parar = new AbortController();
  for (const sinal of ['SIGINT', 'SIGTERM'] as const) process.once(sinal, () => parar.abort());
  await escutar({ cliente, encaminhar: values.encaminhar, arquivo, estado, intervaloMs: intervalo * 1000, escrever, signal: parar.signal });
  escrever('Parado; a próxima execução continua daqui.');
  return 0;
}

const lerArgumentos = (argv: string[]) => parseArgs({
  args: argv, allowPositionals: true, strict: true,
  options: {
    api: { type: 'string' }, chave: { type: 'string' }, encaminhar: { type: 'string' }, segredo: { type: 'string' },
    estado: { type: 'string' }, intervalo: { type: 'string' }, desde: { type: 'string' }, ajuda: { type: 'boolean', short: 'h' },
    versao: { type: 'boolean', short: 'v' },
  },
});

// The state to continue from: the file's, unless it is another API's or key's, or --desde starts over.
async function estadoInicial(
  cliente: Printfarm, arquivo: string, pedido: { api: string; chave: string; segredo: string | undefined; desde: number | null },
): Promise<Estado> {
  const anterior = await lerEstado(arquivo);
  const mesmo = anterior && anterior.api === pedido.api && anterior.chave === prefixoDaChave(pedido.chave);
  if (mesmo && pedido.desde === null) return { ...anterior, segredo: pedido.segredo ?? anterior.segredo };
  // Now by the service's clock, which the events' criado_em are on; and the key checked at once.
  const piso = pedido.desde === null ? (await cliente.GET('/saude')).agora : new Date(pedido.desde).toISOString();
  return {
    versao: 1, api: pedido.api, chave: prefixoDaChave(pedido.chave), segredo: pedido.segredo ?? anterior?.segredo ?? gerarSegredo(),
    piso, janela: piso, vistos: {}, paginas: [],
  };
}

function saida(texto: string, codigo: number): number {
  (codigo === 0 ? process.stdout : process.stderr).write(texto);
  return codigo;
}

principal(process.argv.slice(2)).then(
  (codigo) => process.exit(codigo),
  (error: unknown) => {
    const detalhe = error instanceof ErroDaApi ? `${error.status} ${error.codigo}: ${error.message}` : error instanceof Error ? error.message : String(error);
    process.stderr.write(`printfarm: ${detalhe}\n`);
    process.exit(1);
  },
);
