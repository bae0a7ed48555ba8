/**
 * What an adapter's test file hands the conformance suite: a way to make a
 * fresh, empty store and clients on it.
 */
import type { Adapter, Client, ClientOptions } from 'zaris'

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
  reason: string
  tests: string[]
}
