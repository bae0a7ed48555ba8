/**
 * The HTTP adapter in a browser bundle brings no Node built-in: its Node
 * transport loads `node:http` at run time by a name the bundler does not
 * follow, and the shared watch stream, its ring and the history splice use
 * only web APIs. Bundled for real with esbuild for the browser platform,
 * where a static Node import would fail the build.
 */
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

test('a browser bundle of zaris/http holds no Node built-in', async () => {
  const root = fileURLToPath(new URL('../..', import.meta.url))
  const result = await build({
    stdin: {
      contents: "import { httpAdapter } from './src/adapters/http/index.ts'\nimport { connect } from './src/index.ts'\nconsole.log(typeof httpAdapter, typeof connect)",
      resolveDir: root,
      loader: 'ts',
    },
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    outdir: 'out',
    write: false,
    metafile: true,
    logLevel: 'silent',
  })
  const inputs = Object.keys(result.metafile.inputs)
  expect(inputs.filter((i) => i.startsWith('node:') || /^(http|https|net|stream|events|buffer|crypto)$/.test(i))).toEqual([])
  for (const file of ['watch-hub.ts', 'watch-stream.ts', 'event-ring.ts', 'node-transport.ts', 'client.ts']) {
    expect(inputs.some((i) => i.endsWith(`src/adapters/http/${file}`))).toBe(true)
  }
  // Nothing is left for the runtime to import statically; only dynamic imports remain.
  for (const output of Object.values(result.metafile.outputs)) {
    expect(output.imports.filter((imp) => imp.external && imp.kind !== 'dynamic-import')).toEqual([])
  }
  const text = result.outputFiles.map((f) => f.text).join('\n')
  expect(text).not.toMatch(/from\s*["']node:/)
})
