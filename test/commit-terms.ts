/**
 * Checks, ops and waiting options spelled short, as the handover tests of
 * every store write them (test/file/park-kit.ts, test/postgres/handover-kit.ts).
 */
import type { Check, CommitResult, Op } from 'zaris'

export const set = (key: string, owner: string, ttl = 60_000): Op => ({ type: 'set', key, value: null, owner, ttl })
export const del = (key: string): Op => ({ type: 'delete', key })
export const absent = (key: string): Check => ({ key, revision: null })
export const life = (key: string, created: number): Check => ({ key, created })
export const ok = (r: CommitResult) => r as Extract<CommitResult, { ok: true }>
export const park = (ms = 10_000, order?: number) => ({ waitChange: ms, keepParked: true, parkOrder: order })
