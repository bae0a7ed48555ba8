import { defineConfig } from 'tsup'

/**
 * One entry per public subpath. ESM and CommonJS, with declarations; shared
 * code and lazily loaded adapters land in chunks of their own.
 */
export default defineConfig({
  entry: {
    index: 'src/index.ts',
    memory: 'src/adapters/memory.ts',
    indexeddb: 'src/adapters/indexeddb/index.ts',
    redis: 'src/adapters/redis/index.ts',
    testing: 'src/testing.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  splitting: true,
  treeshake: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  outDir: 'dist',
})
