/**
 * The conformance suite, unchanged, against the Redis adapter on a real
 * redis-server (started on a free loopback port for this file), through a
 * `redis://` URL that opens its connection with ioredis. The same suite runs
 * over node-redis and iovalkey in the files beside this one.
 */
import { conformanceOn } from './suites'

conformanceOn('ioredis')
