/**
 * Loads an optional peer dependency (ioredis, etcd3, better-sqlite3) on
 * first use, or says how to install it.
 *
 * The module name sits in a variable, with the bundlers' ignore comments, so
 * that no bundler follows the import into a browser build: the package is
 * loaded by Node at run time or not at all.
 *
 * @module
 */
import { UnsupportedError } from '../../core/contract/errors'

/**
 * Imports the package `name` for the adapter `adapter` (`the Redis adapter`),
 * or throws an `UnsupportedError` that says how to install `pkg` (the
 * package's published name; `name` differs from it only in tests). Resolves
 * the module's exports, with CommonJS's `default` as `inner`.
 *
 * @example
 * const { mod, inner } = await loadOptional('ioredis', 'ioredis', 'the Redis adapter')
 */
export async function loadOptional(name: string, pkg: string, adapter: string): Promise<{ mod: Record<string, unknown>; inner: Record<string, unknown> | undefined }> {
  let mod: Record<string, unknown>
  try {
    mod = (await import(/* @vite-ignore */ /* webpackIgnore: true */ name)) as Record<string, unknown>
  } catch (err) {
    const code = (err as { code?: unknown }).code
    if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND' || /Cannot find (module|package)/.test(String(err))) {
      throw new UnsupportedError(`${adapter} needs the ${pkg} package, which is not installed: run \`npm install ${pkg}\` (it is an optional peer dependency of zaris)`)
    }
    throw new UnsupportedError(`${adapter} could not load ${pkg}: ${String(err)}`)
  }
  // ESM sees the named exports; CommonJS interop may nest them under `default`.
  return { mod, inner: mod.default as Record<string, unknown> | undefined }
}
