// The layout's rules, read from the import statements (type imports included): api/ and worker/
// never import each other, shared/ imports neither (nor ops/), and no module imports itself back
// through a circle of others. The official client (client/) is published on its own: it imports
// nothing of the project's, and the service imports nothing of it.
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { projectRoot } from '#shared/config.ts';

const test = suite('architecture');
const ROOTS = ['api', 'worker', 'shared', 'ops', 'client'];
/** The project's subpath import of shared/ (package.json, "imports"): `#shared/config.ts` is `shared/config.ts`. */
const SHARED_ALIAS = '#shared/';

/** Every .ts module of the roots with the project modules it imports (paths relative to the project). */
async function importGraph(): Promise<Map<string, string[]>> {
  const graph = new Map<string, string[]>();
  for (const root of ROOTS) {
    for (const file of await readdir(path.join(projectRoot, root), { recursive: true })) {
      // What a build or an install leaves in client/ (dist/, node_modules/) is not the project's source.
      if (!file.endsWith('.ts') || file.split(path.sep).some((part) => part === 'dist' || part === 'node_modules')) continue;
      const from = path.join(root, file);
      const source = await readFile(path.join(projectRoot, from), 'utf8');
      const specifiers = [...source.matchAll(/(?:^|\n)\s*(?:import|export)\b[^'"`;]*?from\s+'([^']+)'|import\(\s*'([^']+)'\s*\)/g)]
        .map((m) => m[1] ?? m[2] ?? '')
        .filter((s) => s.startsWith('.') || s.startsWith(SHARED_ALIAS));
      graph.set(from, specifiers.map((s) => (s.startsWith(SHARED_ALIAS)
        ? path.join('shared', s.slice(SHARED_ALIAS.length))
        : path.normalize(path.join(path.dirname(from), s)))));
    }
  }
  return graph;
}

/** The strongly connected components with more than one module (or a module importing itself). */
function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const indices = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (v: string) => {
    indices.set(v, index);
    low.set(v, index++);
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!indices.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, indices.get(w) ?? 0));
      }
    }
    if (low.get(v) === indices.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1 || (graph.get(v) ?? []).includes(v)) found.push(component.sort());
    }
  };
  for (const v of graph.keys()) if (!indices.has(v)) visit(v);
  return found;
}

test('the import graph has no circle', async () => {
  assert.equal(cycles(await importGraph()), []);
});

const FORBIDDEN: Record<string, string[]> = {
  api: ['worker', 'ops', 'client'], worker: ['api', 'ops', 'client'], shared: ['api', 'worker', 'ops', 'client'], ops: ['client'],
  client: ['api', 'worker', 'shared', 'ops', 'test', 'sql', 'bench', 'docs'],
};

/** Imports that cross a line the layout draws. */
function crossings(graph: Map<string, string[]>): string[] {
  const rootOf = (p: string) => p.split(path.sep)[0] ?? '';
  return [...graph].flatMap(([from, targets]) =>
    targets.filter((to) => (FORBIDDEN[rootOf(from)] ?? []).includes(rootOf(to))).map((to) => `${from} → ${to}`));
}

test('api/ and worker/ never import each other; shared/ imports neither, nor ops/; client/ and the service import nothing of each other', async () => {
  assert.equal(crossings(await importGraph()), []);
});

/**
 * The rooms of api/ and the rooms each may import from (besides its own, shared/ and the table's
 * shape, api/routes/types.ts, which every room may read). api/main.ts, the only module at api/'s
 * root, assembles them all. Admission knows nothing of HTTP, writes or the reference; writes know
 * nothing of HTTP or the routes; the reference reads the route table and nothing that runs a request
 * but its state.
 */
const ROOMS: Record<string, string[]> = {
  'api/http': ['api/admission', 'api/writes', 'api/reference', 'api/routes'],
  'api/admission': [],
  'api/writes': ['api/admission'],
  'api/reference': ['api/routes', 'api/http'],
  'api/routes': ['api/admission', 'api/writes', 'api/reference', 'api/http'],
};
const TABLE_SHAPE = path.join('api', 'routes', 'types.ts');

/** Imports from one room of api/ into another it may not use, and modules of api/ outside any room. */
function roomBreaches(graph: Map<string, string[]>): string[] {
  const roomOf = (p: string) => p.split(path.sep).slice(0, 2).join('/');
  const breaches: string[] = [];
  for (const [from, targets] of graph) {
    if (!from.startsWith(`api${path.sep}`)) continue;
    if (from === path.join('api', 'main.ts')) continue;
    const room = roomOf(from);
    const allowed = ROOMS[room];
    if (!allowed) { breaches.push(`${from}: in no room of api/`); continue; }
    for (const to of targets) {
      if (!to.startsWith(`api${path.sep}`) || to === TABLE_SHAPE || roomOf(to) === room) continue;
      if (!allowed.includes(roomOf(to))) breaches.push(`${from} → ${to}`);
    }
  }
  return breaches;
}

test('every module of api/ is in a room, and imports only from the rooms its own may use', async () => {
  assert.equal(roomBreaches(await importGraph()), []);
});

test('the rules can fail: a planted circle, crossing, room breach and homeless module are found', () => {
  const planted = new Map([['api/a.ts', ['api/b.ts']], ['api/b.ts', ['api/a.ts', 'worker/c.ts']], ['worker/c.ts', []]]);
  assert.equal(cycles(planted), [['api/a.ts', 'api/b.ts']]);
  assert.equal(crossings(planted), ['api/b.ts → worker/c.ts']);
  const rooms = new Map([
    ['api/admission/x.ts', ['api/http/y.ts', 'api/routes/types.ts']],
    ['api/writes/z.ts', ['api/admission/x.ts']],
    ['api/stray.ts', []],
  ]);
  assert.equal(roomBreaches(rooms), ['api/admission/x.ts → api/http/y.ts', 'api/stray.ts: in no room of api/']);
});

test.run();
