/**
 * What an adapter's test file hands the conformance suite: a way to make a
 * fresh, empty store and clients on it — written by hand
 * ({@link StoreFixture}), or made by {@link adapterFixture} from a function
 * that opens the adapter of a namespace.
 */
import { Client, type Adapter, type ClientOptions } from 'zaris'

/** A fresh, empty store for one test: clients and raw adapters on it. */
export interface StoreFixture {
  /** A new client on this store; each call is a distinct client unless `id` is given. */
  connect(options?: ClientOptions): Promise<Client>
  /** A raw adapter on this store, for the adapter-contract tests. */
  adapter(): Promise<Adapter>
  /** Closes what the fixture opened. */
  close(): Promise<void>
  /**
   * Restarts the store as a crash and restart would: it keeps what it keeps
   * durably and loses the rest (a memory server comes back empty). Clients
   * and adapters opened before stay and must reach the store again (they may
   * fail calls with `UnavailableError` meanwhile). Given, the suite checks
   * the `seen` rule: no client is handed a revision at or below one it has
   * seen. Without it, that test is skipped.
   */
  restart?(): Promise<void>
  /**
   * Moves the store's revision to `revision` (a test hook, as an SQL
   * `UPDATE` of the revision row would). Given, the suite checks the end of
   * the revision range: a store refuses a commit past
   * `Number.MAX_SAFE_INTEGER` with `RevisionExhaustedError`.
   */
  setRevision?(revision: number): Promise<void>
  /**
   * The most revisions of watch history this store keeps (each of one
   * event). Given, the suite writes past it and checks that a watch from
   * before it is refused with `CompactedError`, not served a partial history.
   */
  historyKept?: number
  /**
   * An adapter of this kind whose store cannot be reached (a closed port).
   * Given, the suite checks that its calls fail with `UnavailableError`,
   * neither hanging nor crashing (or that opening it does, for an adapter
   * that connects as it opens).
   */
  unreachable?(): Promise<Adapter>
}

/** Makes a fresh store (a new namespace, say) for every test. */
export type FixtureFactory = () => Promise<StoreFixture>

/** Tests an adapter cannot pass, each with the reason. Names are the test titles. */
export interface Skips {
  /** Why, shown beside each skipped title. */
  reason: string
  /** The titles of the tests to skip. */
  tests: string[]
}

/**
 * Opens an adapter on the store named `namespace`. Every call with the same
 * namespace must reach the same store (as two tabs, processes or machines
 * would), and a new namespace must be an empty store.
 */
export type OpenAdapter = (namespace: string) => Adapter | Promise<Adapter>

/** Options of {@link adapterFixture}: the store's test hooks (see {@link StoreFixture}), by namespace. */
export interface AdapterFixtureOptions {
  /** Runs after each test, once its clients and adapters are closed: drop the namespace's data, say. */
  cleanup?(namespace: string): void | Promise<void>
  /** Restarts the store of `namespace` (see {@link StoreFixture.restart}). */
  restart?(namespace: string): void | Promise<void>
  /** Moves the revision of the store of `namespace` (see {@link StoreFixture.setRevision}). */
  setRevision?(namespace: string, revision: number): void | Promise<void>
  /** See {@link StoreFixture.historyKept}. */
  historyKept?: number
  /** Opens an adapter whose store cannot be reached (see {@link StoreFixture.unreachable}). */
  unreachable?(): Adapter | Promise<Adapter>
}

/**
 * The fixture most adapters need: each test gets a namespace of its own, a
 * client is `new Client(await open(namespace), options)`, and everything
 * opened is closed after the test.
 *
 * @example
 * runConformance('memory', adapterFixture((namespace) => memoryAdapter({ namespace })))
 */
export function adapterFixture(open: OpenAdapter, options: AdapterFixtureOptions = {}): FixtureFactory {
  let n = 0
  return async () => {
    const namespace = `conformance-${++n}-${Math.random().toString(36).slice(2, 10)}`
    const opened: Array<{ close(): Promise<void> }> = []
    const adapter = async () => {
      const a = await open(namespace)
      opened.push(a)
      return a
    }
    const fixture: StoreFixture = {
      adapter,
      async connect(clientOptions) {
        const client = new Client(await adapter(), clientOptions)
        opened.push(client)
        return client
      },
      async close() {
        // A client closes its adapter first; closing that adapter again is harmless.
        await Promise.all(opened.reverse().map((o) => o.close()))
        await options.cleanup?.(namespace)
      },
    }
    const { restart, setRevision, unreachable } = options
    if (restart) fixture.restart = async () => restart(namespace)
    if (setRevision) fixture.setRevision = async (revision) => setRevision(namespace, revision)
    if (options.historyKept !== undefined) fixture.historyKept = options.historyKept
    if (unreachable) {
      fixture.unreachable = async () => {
        const a = await unreachable()
        opened.push(a)
        return a
      }
    }
    return fixture
  }
}
