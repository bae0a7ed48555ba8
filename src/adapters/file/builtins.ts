/**
 * Node's built-ins for the file store, got at run time through
 * `process.getBuiltinModule` (Node 20.16 and later) rather than imported: a
 * bundler that follows `connect`'s lazy import of this adapter while building
 * a page (one that ignores the `browser` export condition) then meets no
 * `node:` import it cannot resolve.
 *
 * @module
 */
import { UnsupportedError } from '../../core/contract/errors'

/** The built-in module `name` (`node:fs`, `node:os`). */
export function builtin<T>(name: string): T {
  const get = (globalThis as { process?: { getBuiltinModule?: (id: string) => unknown } }).process?.getBuiltinModule
  if (typeof get !== 'function') throw new UnsupportedError(`a file:// store needs Node 20.16 or later (process.getBuiltinModule, for ${name})`)
  return get(name) as T
}
