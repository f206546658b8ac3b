// The programs that call the guide's TypeScript snippets that export a function (instead of running
// as programs of their own): each imports the snippet's file as the guide writes it and prints
// what the suite checks. They are type-checked with the snippets.
export const DRIVERS: Record<string, string> = {
  'retry-after': `import { comEspera } from './retry-after.ts';

const url = \`\${process.env.PRINTFARM_API}/conta\`;
const init = { headers: { Authorization: \`Bearer \${process.env.PRINTFARM_CHAVE}\` } };
// The plan's burst holds one call: the next is a 429 with Retry-After, which comEspera waits out.
let recusada = false;
for (let i = 0; i < 5 && !recusada; i++) {
  const resposta = await fetch(url, init);
  await resposta.body?.cancel();
  recusada = resposta.status === 429;
}
const resposta = await comEspera(url, init);
console.log(JSON.stringify({ recusada, status: resposta.status }));
`,
  'escrita-segura': `import { postSeguro } from './escrita-segura.ts';

const url = \`\${process.env.PRINTFARM_API}/estoque/movimentos\`;
const corpo = { tipo: 'entrada', sku: 'CANECA-P', quantidade: 1, motivo: 'devolucao' };
const primeira = await postSeguro(url, process.env.PRINTFARM_CHAVE ?? '', corpo, 'devolucao-77');
const segunda = await postSeguro(url, process.env.PRINTFARM_CHAVE ?? '', corpo, 'devolucao-77');
const [a, b] = [(await primeira.json()) as { id: string }, (await segunda.json()) as { id: string }];
console.log(JSON.stringify({ status: [primeira.status, segunda.status], repetida: segunda.headers.get('Idempotent-Replayed'), mesmo: a.id === b.id }));
`,
  'paginar': `import { todos } from './paginar.ts';

const contar = async (filtros?: Record<string, string>) => {
  const ids = new Set<string>();
  for await (const canal of todos<{ id: string }>(process.env.PRINTFARM_API ?? '', process.env.PRINTFARM_CHAVE ?? '', '/canais', filtros)) ids.add(canal.id);
  return ids.size;
};
console.log(JSON.stringify({ todos: await contar(), filtrados: await contar({ atualizado_desde: '2000-01-01T00:00:00Z' }) }));
`,
};
