/**
 * A local store's persistence as an array the test reads (a fake disk, named
 * so): every write the store makes, in order, and a switch that makes writes
 * throw, as a full disk would.
 */
import type { Stored } from '../../src/adapters/kit/write'

export interface Write {
  revision: number
  puts: Stored[]
  deletes: string[]
}

export function arrayDisk() {
  const disk = {
    writes: [] as Write[],
    /** While true, every write throws `disk full`. */
    failing: false,
    persistence: {
      write: (revision: number, puts: Stored[], deletes: string[]) => {
        if (disk.failing) throw new Error('disk full')
        disk.writes.push({ revision, puts, deletes })
      },
    },
  }
  return disk
}
