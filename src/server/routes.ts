/**
 * The paths of the node's API: `/v1/<ns>/<op>`, the namespace in the path
 * and one of the operations below.
 *
 * @module
 */
import { API_PREFIX } from './protocol'

/** A namespace route: group 1 is the namespace segment (still URI-encoded), group 2 the operation. */
export const ROUTE = new RegExp(`^${API_PREFIX}/([^/]*)/(get|list|commit|filter|watch|events)$`)
