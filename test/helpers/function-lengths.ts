// The functions of the project's source and how many lines each spans. Node strips the types
// (replacing them with blanks, so lines and columns stay where they were) and acorn parses what is
// left (test/function-length.test.ts keeps the functions short).
import { readdir, readFile } from 'node:fs/promises';
import { stripTypeScriptTypes } from 'node:module';
import path from 'node:path';
import { parse, type Node } from 'acorn';
import { ancestor } from 'acorn-walk';
import { projectRoot } from '#shared/config.ts';

export type FunctionSpan = { file: string; line: number; name: string; lines: number };

const SKIPPED = new Set(['node_modules', 'dist', 'fixtures']);

/** Every function, method and arrow function under the folders, with the lines it spans. */
export async function functionSpans(roots: string[]): Promise<FunctionSpan[]> {
  const spans: FunctionSpan[] = [];
  for (const root of roots) {
    for (const file of await readdir(path.join(projectRoot, root), { recursive: true })) {
      if (!file.endsWith('.ts') || file.endsWith('.d.ts') || file.split(path.sep).some((p) => SKIPPED.has(p))) continue;
      const name = path.join(root, file);
      spans.push(...spansOf(name, await readFile(path.join(projectRoot, name), 'utf8')));
    }
  }
  return spans;
}

type Named = Node & { id?: { name: string } | null; key?: { name?: string; value?: unknown } };

function spansOf(file: string, source: string): FunctionSpan[] {
  const program = parse(stripTypeScriptTypes(source), { ecmaVersion: 'latest', sourceType: 'module', locations: true });
  const spans: FunctionSpan[] = [];
  const visit = (node: Node, _state: unknown, ancestors: Node[]) => {
    const { start, end } = node.loc!;
    spans.push({ file, line: start.line, name: nameOf(node as Named, ancestors), lines: end.line - start.line + 1 });
  };
  ancestor(program, { FunctionDeclaration: visit, FunctionExpression: visit, ArrowFunctionExpression: visit });
  return spans;
}

/** The name a reader would look for: the function's own, or the variable, property or method it is bound to. */
function nameOf(node: Named, ancestors: Node[]): string {
  if (node.id) return node.id.name;
  const parent = ancestors[ancestors.length - 2] as Named | undefined;
  if (parent?.type === 'VariableDeclarator') return (parent as Named).id?.name ?? '(anonymous)';
  if (parent && ['MethodDefinition', 'Property', 'PropertyDefinition'].includes(parent.type)) {
    return parent.key?.name ?? String(parent.key?.value ?? '(anonymous)');
  }
  return '(anonymous)';
}
