/**
 * What weighs what in a browser app's chunks: each case is a few lines of app
 * code bundled the way test/package/size.test.ts bundles (Vite, minified,
 * es2022, the `browser` export condition's variants); for each chunk, whether
 * the page loads it at start (`S`) or on demand, its minified and gzip -9
 * bytes, and each module's rendered bytes in it (before minification, which
 * rolldown applies to the whole chunk) with an estimate of its share of the
 * chunk's gzip size (gzip is not additive: the share is in proportion to
 * rendered bytes). bench/FINDINGS.md's size section quotes it.
 *
 *   npx tsx bench/tools/chunk-breakdown.ts            # every case
 *   npx tsx bench/tools/chunk-breakdown.ts "connect"  # cases whose name holds the word
 *
 * @module
 */
import { fileURLToPath } from 'node:url'
import { bundle, gz, loadedAtStart, min, type Chunk } from '../../test/package/browser-bundle'

const root = fileURLToPath(new URL('../../', import.meta.url))

/** The apps measured, by name. */
export const CASES: Record<string, string> = {
  'zaris *': "import * as m from 'zaris'\nObject.assign(globalThis, { m })\n",
  'zaris/indexeddb *': "import * as m from 'zaris/indexeddb'\nObject.assign(globalThis, { m })\n",
  'zaris/http *': "import * as m from 'zaris/http'\nObject.assign(globalThis, { m })\n",
  'zaris * + zaris/indexeddb *': "import * as a from 'zaris'\nimport * as b from 'zaris/indexeddb'\nObject.assign(globalThis, { a, b })\n",
  // The bench's "zaris + zaris/indexeddb" row (bench/scenarios/bundle.ts), which counts the entry chunk alone.
  'connect + indexedDbAdapter': "import { connect } from 'zaris'\nimport { indexedDbAdapter } from 'zaris/indexeddb'\nObject.assign(globalThis, { app: { connect, indexedDbAdapter } })\n",
  "connect('zaris://idb/app')": "import { connect } from 'zaris'\nObject.assign(globalThis, { open: () => connect('zaris://idb/app') })\n",
  "connect('zaris://host:7861/ns')": "import { connect } from 'zaris'\nObject.assign(globalThis, { open: () => connect('zaris://host:7861/ns') })\n",
}

const name = (id: string) => id.replace(root, '').replace(/^.*node_modules\//, 'npm:')

/** One line per chunk, then one per module of it with at least `floor` rendered bytes. */
export function describeChunks(chunks: Chunk[], floor = 200): string[] {
  const start = new Set(loadedAtStart(chunks))
  const lines: string[] = []
  for (const c of chunks) {
    const size = min([c])
    const zipped = gz([c])
    lines.push(`  ${start.has(c) ? 'S' : ' '} ${c.fileName}: ${size} B min, ${zipped} B gz`)
    const mods = Object.entries(c.modules).sort((a, b) => b[1].renderedLength - a[1].renderedLength)
    const rendered = mods.reduce((t, [, m]) => t + m.renderedLength, 0)
    for (const [id, m] of mods) {
      if (m.renderedLength < floor) continue
      lines.push(`      ${String(m.renderedLength).padStart(6)} rendered  ~${String(Math.round((m.renderedLength / rendered) * zipped)).padStart(5)} gz  ${name(id)}`)
    }
  }
  return lines
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const only = process.argv[2]
  for (const [label, code] of Object.entries(CASES)) {
    if (only && !label.includes(only)) continue
    const { chunks } = await bundle(code)
    const start = loadedAtStart(chunks)
    console.log(`\n== ${label}: at start ${min(start)} B min, ${gz(start)} B gz; all ${chunks.length} chunk(s) ${gz(chunks)} B gz`)
    for (const line of describeChunks(chunks)) console.log(line)
  }
}
