import { defineConfig, type Options } from 'tsup'

/**
 * Two builds into dist/ (`npm run build` empties it first, and then makes
 * dist/browser/ with scripts/browser-build.ts: what the `browser` export
 * condition picks, one file per module so that the app's bundler decides
 * the chunks):
 *
 * - every public subpath, ESM and CommonJS, with declarations; shared code
 *   and lazily loaded adapters land in chunks of their own;
 * - dist/conformance.js (`zaris/conformance`): the suite every built-in
 *   adapter passes (test/conformance), for adapters written outside zaris.
 *   ESM only, as vitest is; it imports `zaris` and `vitest` as the user's
 *   project resolves them, so it checks the same classes the user's adapter
 *   uses.
 */

const shared = {
  splitting: true,
  treeshake: true,
  clean: false,
  target: 'es2022',
  platform: 'neutral',
  // The node (server, cli) uses Node built-ins; they stay imports, never bundled.
  external: [/^node:/],
} satisfies Options

export default defineConfig([
  {
    ...shared,
    entry: {
      index: 'src/index.ts',
      memory: 'src/adapters/memory.ts',
      indexeddb: 'src/adapters/indexeddb/index.ts',
      redis: 'src/adapters/redis/index.ts',
      etcd: 'src/adapters/etcd/index.ts',
      postgres: 'src/adapters/postgres/index.ts',
      file: 'src/adapters/file/index.ts',
      testing: 'src/testing.ts',
      'web-locks': 'src/web-locks/index.ts',
      elect: 'src/elect/index.ts',
      tabs: 'src/tabs/index.ts',
      otel: 'src/otel/index.ts',
      http: 'src/adapters/http/index.ts',
      server: 'src/server/index.ts',
      cli: 'src/cli/zaris.ts',
    },
    format: ['esm', 'cjs'],
    dts: true,
    outDir: 'dist',
    // dist/cli.js is the `zaris` bin: it needs its shebang.
    async onSuccess() {
      const { readFile, writeFile, chmod } = await import('node:fs/promises')
      const cli = 'dist/cli.js'
      const code = await readFile(cli, 'utf8')
      if (!code.startsWith('#!')) await writeFile(cli, `#!/usr/bin/env node\n${code}`)
      await chmod(cli, 0o755)
    },
  },
  {
    ...shared,
    entry: { conformance: 'test/conformance/index.ts' },
    format: ['esm'],
    dts: true,
    outDir: 'dist',
    external: ['zaris', /^zaris\//, 'vitest'],
  },
])
