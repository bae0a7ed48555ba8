import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'
import { viteBrowserVariants } from '../scripts/browser-variants.ts'

const src = (path: string) => fileURLToPath(new URL(`../src/${path}`, import.meta.url))

/** The demo page: `import 'zaris'` means this repository's source, as a page's build sees it (the browser variants). */
export default defineConfig({
  plugins: [viteBrowserVariants()],
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: './',
  resolve: {
    alias: {
      'zaris/indexeddb': src('adapters/indexeddb/index.ts'),
      'zaris/memory': src('adapters/memory.ts'),
      zaris: src('index.ts'),
    },
  },
  build: { outDir: 'dist', emptyOutDir: true, target: 'es2022' },
  server: { port: 5173, strictPort: false },
})
