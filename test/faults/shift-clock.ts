/**
 * Loaded with `--import` into a client process, this moves its wall clock:
 * `Date.now()` and `new Date()` by `ZARIS_CLOCK_OFFSET_MS` from the start,
 * then by each step of `ZARIS_CLOCK_JUMPS` (`afterMs:deltaMs,...`, e.g.
 * `500:3600000` jumps an hour ahead half a second after start) — what NTP
 * stepping a clock, or a user changing it, does to a process. The monotonic
 * clock (`performance.now()`) is left alone, as the OS leaves it.
 * Each jump is written to stderr as `clock jumped <delta> (offset <offset>)`.
 */
const RealDate = Date
const realNow = RealDate.now.bind(RealDate)
let offset = Number(process.env.ZARIS_CLOCK_OFFSET_MS ?? 0) || 0

class ShiftedDate extends RealDate {
  constructor(...args: unknown[]) {
    if (args.length === 0) super(realNow() + offset)
    else super(...(args as [string | number | Date]))
  }

  static override now(): number {
    return realNow() + offset
  }
}
globalThis.Date = ShiftedDate as DateConstructor

for (const step of (process.env.ZARIS_CLOCK_JUMPS ?? '').split(',').filter(Boolean)) {
  const [after, delta] = step.split(':').map(Number) as [number, number]
  const jump = () => {
    offset += delta
    process.stderr.write(`clock jumped ${delta} (offset ${offset})\n`)
  }
  if (after <= 0) jump()
  else setTimeout(jump, after).unref()
}
