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
    etcd: 'src/adapters/etcd/index.ts',
    testing: 'src/testing.ts',
    http: 'src/adapters/http/index.ts',
    server: 'src/server/index.ts',
    cli: 'src/server/cli.ts',
  },
  format: ['esm', 'cjs'],
  dts: true,
  splitting: true,
  treeshake: true,
  clean: true,
  target: 'es2022',
  platform: 'neutral',
  outDir: 'dist',
  // The node (server, cli) uses Node built-ins; they stay imports, never bundled.
  external: [/^node:/],
  // dist/cli.js is the `zaris` bin: it needs its shebang.
  async onSuccess() {
    const { readFile, writeFile, chmod } = await import('node:fs/promises')
    const cli = 'dist/cli.js'
    const code = await readFile(cli, 'utf8')
    if (!code.startsWith('#!')) await writeFile(cli, `#!/usr/bin/env node\n${code}`)
    await chmod(cli, 0o755)
  },
})
