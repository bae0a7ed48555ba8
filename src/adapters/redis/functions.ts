/**
 * Runs the adapter's scripts as Redis Functions, falling back to `EVALSHA`.
 *
 * An `EVAL` script builds every helper it holds (~35 Lua closures) on every
 * call; a function library builds them once, when it loads. That is 6-11 µs
 * of Redis time per lock commit (bench/FINDINGS.md §24, §26). So every script
 * is also a function of one library, `zaris_<hash>`, whose name carries a
 * hash of its text: function names are global to a Redis server, and two
 * versions of zaris sharing one must not replace each other's.
 *
 * - The library is loaded (`FUNCTION LOAD`) when a call finds it missing
 *   ("Function not found": a new server, a restart without persistence, a
 *   `FUNCTION FLUSH`), and the call is sent again: a call that found no
 *   function ran nothing.
 * - `EVALSHA` (with `EVAL` for a script missing from the cache) serves a
 *   connection whose Redis cannot run or
 *   load functions: Redis before 7 or a proxy without the commands (any
 *   refusal of `FCALL` that did not come from the function itself and is
 *   not about now, the credentials or the keys), an ACL user without
 *   `fcall` or `function|load`, a library Redis refuses. And
 *   every cluster (ioredis `Cluster`, node-redis `createCluster`), where a
 *   library would have to be loaded on each primary.
 *
 * @module
 */
import type { LuaScript, RedisLink } from './link'
import { TRANSIENT } from './load'
import { CHECKED_PARTS, COMMIT_PARTS, PRELUDE } from './prelude'
import { evalText, SCRIPTS, type ScriptName } from './scripts'

/** Number of KEYS every script takes (see `namespaceKeys`). */
const NUMBER_OF_KEYS = 7

/** The library: its name and text, and the function name of each script. */
export interface Library {
  readonly name: string
  readonly text: string
  readonly functions: Readonly<Record<ScriptName, string>>
}

let library: Library | undefined

/** The library of every script, its helpers defined once (built on first use). */
export function scriptLibrary(): Library {
  if (library) return library
  const names = Object.keys(SCRIPTS) as ScriptName[]
  const helpers = PRELUDE + COMMIT_PARTS + CHECKED_PARTS
  const name = `zaris_${hash64(helpers + names.map((n) => `${n}\n${SCRIPTS[n].body}`).join('\n'))}`
  const functions = Object.fromEntries(names.map((n) => [n, `${name}_${n}`])) as Record<ScriptName, string>
  const registered = names.map((n) => `redis.register_function('${functions[n]}', function(keys, argv)\ninit(keys, argv)\n${SCRIPTS[n].body}\nend)\n`)
  library = { name, text: `#!lua name=${name}\n${helpers}\n${registered.join('')}`, functions }
  return library
}

/** A 64-bit hash of the text (two FNV-1a-style 32-bit lanes), as hex: enough to tell library texts apart. */
function hash64(text: string): string {
  let a = 0x811c9dc5
  let b = 0xcbf29ce4
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x01000193) ^ (a >>> 15)
  }
  return (a >>> 0).toString(16).padStart(8, '0') + (b >>> 0).toString(16).padStart(8, '0')
}

/**
 * What a refused `FCALL` means: the library is `missing` (load it and send
 * again), this Redis will not run functions for this user (`unsupported`:
 * go back to `EVALSHA`), or an `error` for the caller.
 */
function refusal(message: string): 'missing' | 'unsupported' | 'error' {
  if (/^ERR Function not found/i.test(message)) return 'missing'
  // Raised inside the function (Redis appends "script: <name>, on @user_function:<line>"; the scripts return no
  // error replies of their own): it may have written, so it must not run again. Or about now, the credentials or the keys.
  if (/@user_function|script: zaris_/.test(message) || TRANSIENT.test(message) || /^(NOAUTH|WRONGPASS)\b/.test(message)) return 'error'
  if (/^NOPERM/.test(message) && !/'fcall' command/.test(message)) return 'error'
  // Refused before it ran: unknown to this Redis or proxy, not permitted for this user, not supported.
  return 'unsupported'
}

/** How this connection runs scripts: functions until Redis shows it cannot. */
export type ScriptMode = 'function' | 'eval'

/** Runs the scripts on one client: as functions where Redis can, by `EVALSHA` where not. */
export class ScriptRunner {
  readonly #link: RedisLink
  readonly #eval: Record<string, LuaScript>
  #mode: ScriptMode
  #loading: Promise<void> | undefined

  constructor(link: RedisLink) {
    this.#link = link
    this.#eval = Object.fromEntries(Object.entries(SCRIPTS).map(([name, source]) => [name, { lua: evalText(source) }]))
    this.#mode = link.cluster ? 'eval' : 'function'
  }

  /** `function` until this Redis refused functions, then `eval` for good. */
  get mode(): ScriptMode {
    return this.#mode
  }

  /** Runs script `name` with the namespace's keys followed by its arguments. */
  async run(name: ScriptName, keysAndArgs: Array<string | number>): Promise<unknown> {
    // Twice at most: a library found missing is loaded and the call sent again once.
    for (let attempt = 0; attempt < 2 && this.#mode === 'function'; attempt++) {
      try {
        return await this.#link.call(String(keysAndArgs[0]), ['FCALL', scriptLibrary().functions[name], NUMBER_OF_KEYS, ...keysAndArgs])
      } catch (err) {
        const message = replyMessage(err)
        const why = message === undefined ? 'error' : refusal(message)
        if (why === 'error') throw err
        if (why === 'unsupported') this.#mode = 'eval'
        else await this.#load()
      }
    }
    return this.#link.evalScript(this.#eval[name]!, NUMBER_OF_KEYS, keysAndArgs)
  }

  /** Loads the library once for every call that found it missing at the same time. */
  #load(): Promise<void> {
    this.#loading ??= this.#link
      .call(undefined, ['FUNCTION', 'LOAD', scriptLibrary().text])
      .then(
        () => {},
        (err: unknown) => {
          const message = replyMessage(err)
          // Another client (or an earlier connection) loaded it first.
          if (message !== undefined && /already exists/i.test(message)) return
          // A refusal that will not change (not permitted, unknown, a library this Redis will not take): scripts it is.
          if (message !== undefined && !TRANSIENT.test(message)) this.#mode = 'eval'
          else throw err
        },
      )
      .finally(() => (this.#loading = undefined))
    return this.#loading
  }
}

/** The text of a Redis error reply (named `ReplyError` by every library's link), or undefined for any other failure (a dropped connection, a timeout). */
function replyMessage(err: unknown): string | undefined {
  return err instanceof Error && err.name === 'ReplyError' ? err.message : undefined
}
