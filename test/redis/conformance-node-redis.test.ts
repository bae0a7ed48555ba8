/**
 * The conformance suite over node-redis: a `redis://…&client=redis` URL, so
 * zaris opens the connection with node-redis's `createClient` (v6: RESP3).
 */
import { conformanceOn } from './suites'

conformanceOn('redis')
