/**
 * The conformance suite (its checked histories included) over iovalkey: a
 * `redis://…&client=iovalkey` URL. In `npm run test:faults`, not `npm test`:
 * iovalkey is ioredis's code under another name and takes the same path
 * through the adapter's client layer (`IoredisLink`), which `npm test` runs
 * the suite on over ioredis; `npm test` keeps iovalkey's own short checks
 * (test/redis/clients.test.ts).
 */
import { conformanceOn } from '../redis/suites'

conformanceOn('iovalkey')
