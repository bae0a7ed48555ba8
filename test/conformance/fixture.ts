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

/** Options of {@link adapterFixture}. */
export interface AdapterFixtureOptions {
  /** Runs after each test, once its clients and adapters are closed: drop the namespace's data, say. */
  cleanup?(namespace: string): void | Promise<void>
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
    return {
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
  }
}
