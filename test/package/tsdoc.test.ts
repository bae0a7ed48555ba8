/**
 * Every public symbol carries TSDoc: each export of each public entry point
 * (the `zaris*` paths of tsconfig.json), every public member of exported
 * classes and interfaces, and an `@example` on exported classes and functions.
 */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import ts from 'typescript'
import { expect, test } from 'vitest'

const root = resolve(import.meta.dirname, '../..')
const tsconfig = JSON.parse(readFileSync(resolve(root, 'tsconfig.json'), 'utf8')) as { compilerOptions: { paths: Record<string, string[]> } }
const entries = Object.entries(tsconfig.compilerOptions.paths)
  .filter(([name]) => name === 'zaris' || name.startsWith('zaris/'))
  .map(([name, [file]]) => ({ name, file: resolve(root, file!) }))

test('every public symbol has TSDoc', () => {
  const program = ts.createProgram(entries.map((e) => e.file), { strict: true, target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.ESNext, moduleResolution: ts.ModuleResolutionKind.Bundler })
  const checker = program.getTypeChecker()
  const missing: string[] = []
  const doc = (symbol: ts.Symbol) => ts.displayPartsToString(symbol.getDocumentationComment(checker)).trim()
  const internal = (symbol: ts.Symbol) => symbol.getJsDocTags(checker).some((t) => t.name === 'internal')
  const hasExample = (symbol: ts.Symbol) => symbol.getJsDocTags(checker).some((t) => t.name === 'example')

  for (const entry of entries) {
    const source = program.getSourceFile(entry.file)!
    const moduleSymbol = checker.getSymbolAtLocation(source)
    for (let symbol of checker.getExportsOfModule(moduleSymbol!)) {
      if (symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol)
      const where = `${entry.name}: ${symbol.name}`
      if (!doc(symbol)) missing.push(where)
      const isCallable = symbol.flags & (ts.SymbolFlags.Function | ts.SymbolFlags.Class)
      if (isCallable && !hasExample(symbol)) missing.push(`${where} (@example)`)
      if (!(symbol.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))) continue
      for (const [name, member] of symbol.members ?? new Map<string, ts.Symbol>()) {
        const n = String(name)
        if (n.startsWith('#') || n.startsWith('__') || internal(member) || member.flags & ts.SymbolFlags.TypeParameter) continue
        const decl = member.declarations?.[0]
        if (decl && ts.getCombinedModifierFlags(decl as ts.Declaration) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) continue
        if (!doc(member)) missing.push(`${where}.${n}`)
      }
    }
  }
  expect(missing).toEqual([])
}, 120_000)
