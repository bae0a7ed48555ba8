/**
 * The browser build's one rule: a relative import of `x` inside src/ whose
 * `x.browser.ts` exists gets that file instead (`./schemes` becomes
 * `./schemes.browser`: a page's `connect` knows only a page's schemes). Used
 * by tsup for dist/browser and by Vite builds of pages from source (the demo,
 * the bundle tests).
 */
import { existsSync } from 'node:fs'
import { dirname, resolve, sep } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { Plugin as EsbuildPlugin } from 'esbuild'
import type { Plugin as VitePlugin } from 'vite'

const src = fileURLToPath(new URL('../src/', import.meta.url))

/** The browser variant of `source` imported from `importerDir`, if src/ has one. */
export function browserVariant(source: string, importerDir: string): string | undefined {
  if (!/^\.\.?\//.test(source) || !(importerDir + sep).startsWith(src)) return undefined
  const variant = `${resolve(importerDir, source)}.browser.ts`
  return existsSync(variant) ? variant : undefined
}

/** The rule as an esbuild plugin (tsup). */
export const esbuildBrowserVariants: EsbuildPlugin = {
  name: 'zaris-browser-variants',
  setup(build) {
    build.onResolve({ filter: /^\.\.?\// }, (args) => {
      const path = browserVariant(args.path, args.resolveDir)
      return path ? { path } : undefined
    })
  },
}

/** The rule as a Vite plugin, for pages built from source. */
export function viteBrowserVariants(): VitePlugin {
  return {
    name: 'zaris-browser-variants',
    enforce: 'pre',
    resolveId(source, importer) {
      return importer ? (browserVariant(source, dirname(importer)) ?? null) : null
    },
  }
}
