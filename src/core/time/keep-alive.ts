/**
 * Keeps a Node process alive while a client holds, watches or waits for
 * something, and only then: every other timer of zaris is unref'd, so a
 * process whose clients hold and watch nothing exits by itself. Browsers have
 * no such notion, so there this does nothing.
 *
 * One idle interval serves the whole process; it is ref'd while anything is
 * open and unref'd otherwise (a flag flip, cheap enough for every acquire).
 *
 * @module
 */

type Ref = { ref(): unknown; unref(): unknown }

let count = 0
let timer: Ref | null | undefined

/**
 * Registers one reason to stay alive; call the returned function (once) when
 * it is gone.
 */
export function keepAlive(): () => void {
  if (timer === undefined) {
    const t = setInterval(() => {}, 1 << 30) as unknown
    if (typeof (t as Partial<Ref>)?.unref === 'function') timer = t as Ref
    else {
      clearInterval(t as ReturnType<typeof setInterval>)
      timer = null // a browser: nothing to keep alive
    }
  }
  if (count++ === 0) timer?.ref()
  let done = false
  return () => {
    if (done) return
    done = true
    if (--count === 0) timer?.unref()
  }
}
