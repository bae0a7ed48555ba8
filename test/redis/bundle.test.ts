/**
 * `import 'zaris'` in a browser bundle pulls no Redis client: the Redis
 * adapter is a lazily loaded chunk of its own, and ioredis (with the Node
 * built-ins it needs) is in no chunk at all. Bundled for real with esbuild,
 * for the browser platform, where a Node built-in would fail the build.
 */
import { build } from 'esbuild'
import { fileURLToPath } from 'node:url'
import { expect, test } from 'vitest'

test('a browser bundle of zaris holds no Redis client, and the Redis adapter only in a lazy chunk', async () => {
  const root = fileURLToPath(new URL('../..', import.meta.url))
  const result = await build({
    stdin: { contents: "import { connect } from './src/index.ts'\nconsole.log(typeof connect)", resolveDir: root, loader: 'ts' },
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
  expect(inputs.filter((i) => /node_modules\/(ioredis|redis-errors|cluster-key-slot|denque|@ioredis)\//.test(i))).toEqual([])
  expect(inputs.some((i) => i.includes('src/adapters/redis/'))).toBe(true)

  const outputs = Object.entries(result.metafile.outputs)
  const entry = outputs.find(([, o]) => o.entryPoint !== undefined)!
  // The entry chunk does not contain the adapter; it imports it dynamically.
  expect(Object.keys(entry[1].inputs).some((i) => i.includes('src/adapters/redis/'))).toBe(false)
  const redisChunks = outputs.filter(([, o]) => Object.keys(o.inputs).some((i) => i.includes('src/adapters/redis/')))
  expect(redisChunks.length).toBeGreaterThan(0)
  // Reached only by a dynamic import (from the entry or from a shared chunk of the entry's), never a static one.
  const importsOf = (path: string) => outputs.flatMap(([, o]) => o.imports.filter((imp) => imp.path === path))
  for (const [path] of redisChunks) {
    expect(importsOf(path).length).toBeGreaterThan(0)
    expect(importsOf(path).every((imp) => imp.kind === 'dynamic-import')).toBe(true)
  }
  // What the chunk leaves to run time is the ioredis import, behind a variable, never followed by the bundler.
  for (const [, o] of redisChunks) expect(o.imports.filter((imp) => imp.external && imp.kind !== 'dynamic-import')).toEqual([])
})
