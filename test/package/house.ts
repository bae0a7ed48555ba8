/**
 * The house rules of src/, as checks over a source tree (so a test can run
 * them on src/ and on a tree with a planted violation):
 *
 * - no file over {@link MAX_FILE_LINES} lines;
 * - no function over {@link MAX_FUNCTION_LINES} lines, counted as eslint's
 *   `max-lines-per-function` counts by default (first line to last,
 *   comments and blank lines included), every function-like node on its own;
 * - no import loop among the tree's modules (static `import`/`export ...
 *   from`, type-only ones included: a loop of types is still a tangle, and
 *   lazy `import()`s: a chunk that loads the module that loads it is one
 *   room with two doors);
 * - code outside the core reaches into it only through the contract
 *   (`core/contract/`), time (`core/time/`) and the public API files at the
 *   core's top (`core/*.ts`), never the acquire, hold or election rooms;
 * - the core (`core/`) imports only core modules, no package and no Node
 *   built-in, and its code (identifiers and strings, anywhere in a word;
 *   comments aside) names no adapter and no store scheme.
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

export const MAX_FILE_LINES = 450
export const MAX_FUNCTION_LINES = 120

/** One rule broken, as `file: what` (file relative to the tree's root). */
export type Violation = string

/** Every .ts file under `root`. */
export function sourceFiles(root: string): string[] {
  const out: string[] = []
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const path = join(dir, name)
      if (statSync(path).isDirectory()) walk(path)
      else if (name.endsWith('.ts')) out.push(path)
    }
  }
  walk(root)
  return out
}

const parse = (file: string) => ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true)
const lineOf = (sf: ts.SourceFile, pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1

export function longFiles(root: string): Violation[] {
  return sourceFiles(root)
    .map((file) => [file, readFileSync(file, 'utf8').replace(/\n$/, '').split('\n').length] as const)
    .filter(([, lines]) => lines > MAX_FILE_LINES)
    .map(([file, lines]) => `${relative(root, file)}: ${lines} lines`)
}

export function longFunctions(root: string): Violation[] {
  const out: Violation[] = []
  for (const file of sourceFiles(root)) {
    const sf = parse(file)
    const visit = (node: ts.Node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const lines = lineOf(sf, node.getEnd()) - lineOf(sf, node.getStart()) + 1
        if (lines > MAX_FUNCTION_LINES) out.push(`${relative(root, file)}:${lineOf(sf, node.getStart())}: a function of ${lines} lines`)
      }
      ts.forEachChild(node, visit)
    }
    visit(sf)
  }
  return [...out]
}

/** The module specifiers a file imports or re-exports from, statically, and (with `lazy`) by `import()` too. */
function importsOf(sf: ts.SourceFile, lazy = false): Array<{ spec: string; line: number }> {
  const out: Array<{ spec: string; line: number }> = []
  sf.forEachChild((n) => {
    if ((ts.isImportDeclaration(n) || ts.isExportDeclaration(n)) && n.moduleSpecifier && ts.isStringLiteral(n.moduleSpecifier)) {
      out.push({ spec: n.moduleSpecifier.text, line: lineOf(sf, n.getStart()) })
    }
  })
  if (!lazy) return out
  const visit = (n: ts.Node) => {
    if (ts.isCallExpression(n) && n.expression.kind === ts.SyntaxKind.ImportKeyword && n.arguments[0] && ts.isStringLiteral(n.arguments[0])) {
      out.push({ spec: n.arguments[0].text, line: lineOf(sf, n.getStart()) })
    }
    ts.forEachChild(n, visit)
  }
  visit(sf)
  return out
}

function resolveLocal(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec)
  return [`${base}.ts`, join(base, 'index.ts')].find((f) => existsSync(f))
}

export function importLoops(root: string): Violation[] {
  const graph = new Map<string, string[]>()
  for (const file of sourceFiles(root)) {
    graph.set(file, importsOf(parse(file), true).flatMap(({ spec }) => (spec.startsWith('.') ? (resolveLocal(file, spec) ?? []) : [])))
  }
  // Tarjan's strongly connected components: every component of more than one module is a loop.
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const onStack = new Set<string>()
  const loops: Violation[] = []
  const connect = (v: string) => {
    index.set(v, index.size)
    low.set(v, index.get(v)!)
    stack.push(v)
    onStack.add(v)
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!))
    }
    if (low.get(v) !== index.get(v)) return
    const component: string[] = []
    let w: string
    do {
      w = stack.pop()!
      onStack.delete(w)
      component.push(w)
    } while (w !== v)
    if (component.length > 1 || graph.get(v)!.includes(v)) loops.push(`${component.map((f) => relative(root, f)).sort().join(' <-> ')}: an import loop`)
  }
  for (const file of graph.keys()) if (!index.has(file)) connect(file)
  return loops
}

/**
 * What the core may not do: import anything outside `core/`, or name a
 * store. `names` are the adapters' and schemes' names.
 */
export function coreViolations(root: string, names: string[]): Violation[] {
  const core = join(root, 'core')
  // Anywhere in a word: indexedDbAdapter names one as much as the string "indexeddb" does.
  const named = new RegExp(names.join('|'), 'i')
  const out = new Set<Violation>()
  for (const file of sourceFiles(core)) {
    const sf = parse(file)
    const at = (line: number) => `${relative(root, file)}:${line}`
    for (const { spec, line } of importsOf(sf)) {
      const target = spec.startsWith('.') ? resolve(dirname(file), spec) : undefined
      if (!target) out.add(`${at(line)}: imports the package or built-in ${JSON.stringify(spec)}`)
      else if (!(target + '/').startsWith(core + '/')) out.add(`${at(line)}: imports ${JSON.stringify(spec)}, outside the core`)
    }
    const visit = (node: ts.Node) => {
      const text = ts.isIdentifier(node) || ts.isStringLiteralLike(node) || ts.isTemplateLiteralToken(node) ? node.text : undefined
      const hit = text === undefined ? null : named.exec(text)
      if (hit) out.add(`${at(lineOf(sf, node.getStart()))}: names ${JSON.stringify(hit[0].toLowerCase())}`)
      ts.forEachChild(node, visit)
    }
    visit(sf)
  }
  return [...out]
}

/** The rooms of the core that outside code may import: the contract, time, and the public API files at its top. */
const OPEN_ROOMS = ['contract', 'time']

/**
 * Imports (static or lazy) from outside `core/` into a room of the core that
 * is not open to it: `core/acquire/`, `core/hold/`, `core/election/` are the
 * core's own.
 */
export function closedRoomImports(root: string): Violation[] {
  const core = join(root, 'core')
  const out: Violation[] = []
  for (const file of sourceFiles(root)) {
    if ((file + '/').startsWith(core + '/')) continue
    const sf = parse(file)
    for (const { spec, line } of importsOf(sf, true)) {
      if (!spec.startsWith('.')) continue
      const target = resolveLocal(file, spec)
      if (!target || !target.startsWith(core + '/')) continue
      const inside = relative(core, target).split('/')
      if (inside.length === 1 || OPEN_ROOMS.includes(inside[0]!)) continue
      out.push(`${relative(root, file)}:${line}: imports ${JSON.stringify(spec)}, a room of the core that is not open to it`)
    }
  }
  return out
}
