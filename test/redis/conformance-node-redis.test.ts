/**
 * The conformance suite over node-redis: a `redis://…&client=redis` URL, so
 * zaris opens the connection with node-redis's `createClient` (RESP2, what
 * zaris asks for; RESP3 runs through a user's `createCluster` in
 * cluster-node-redis.test.ts and a user's clients in clients.test.ts).
 */
import { conformanceOn } from './suites'

conformanceOn('redis')
