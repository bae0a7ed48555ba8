/**
 * The conformance suite over iovalkey: a `redis://…&client=iovalkey` URL.
 */
import { conformanceOn } from './suites'

conformanceOn('iovalkey')
