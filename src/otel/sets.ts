/**
 * The attribute sets of one client's metrics, each made once and handed to
 * the SDK as the same object every time: no object built per recording.
 *
 * @module
 */
import type { Attributes } from './api'

/** What an acquire takes: a lock, several locks, a lease, an election's term or a semaphore's permit. */
export type HoldKind = 'lock' | 'locks' | 'lease' | 'term' | 'permit'

/** The attribute sets of one client's metrics, from a cache its meter provider shares. */
export class AttributeSets {
  readonly #sets: Map<string, Attributes>
  readonly store: string
  constructor(sets: Map<string, Attributes>, store: string) {
    this.#sets = sets
    this.store = store
  }

  /** `{ zaris.store }` with one more attribute (`name` = `value`), or none. */
  of(name: string | undefined, value?: string): Attributes {
    const id = `${this.store}\u0001${name}\u0001${value}`
    let a = this.#sets.get(id)
    if (!a) {
      a = name === undefined ? { 'zaris.store': this.store } : { 'zaris.store': this.store, [name]: value }
      this.#sets.set(id, a)
    }
    return a
  }

  /** A hold's set (store, kind, key group) with `name` = `value` added. */
  hold(base: Attributes, name: string, value: string): Attributes {
    const id = `${base['zaris.store']}\u0001${base['zaris.hold.kind']}\u0001${base['zaris.key.group']}\u0001${name}\u0001${value}`
    let a = this.#sets.get(id)
    if (!a) this.#sets.set(id, (a = { ...base, [name]: value }))
    return a
  }

  /** The base set of a hold of `kind`, in key group `group`. */
  base(kind: HoldKind, group: string | undefined): Attributes {
    const id = `${this.store}\u0001${kind}\u0001${group}`
    let a = this.#sets.get(id)
    if (!a) {
      a = { 'zaris.store': this.store, 'zaris.hold.kind': kind }
      if (group !== undefined) a['zaris.key.group'] = group
      this.#sets.set(id, a)
    }
    return a
  }

  /** An acquire's set: its hold's, with mode and outcome. */
  acquire(base: Attributes, mode: string, outcome: string): Attributes {
    const id = `${base['zaris.store']}\u0001${base['zaris.hold.kind']}\u0001${base['zaris.key.group']}\u0001${mode}\u0001${outcome}`
    let a = this.#sets.get(id)
    if (!a) this.#sets.set(id, (a = { ...base, 'zaris.lock.mode': mode, 'zaris.acquire.outcome': outcome }))
    return a
  }
}
