/**
 * Keeps a Node process alive while a client holds, watches or waits for
 * something, and only then: every other timer of zaris is unref'd, so a
 * process whose clients hold and watch nothing exits by itself. In browsers
 * this costs one idle interval while anything is open.
 *
 * @module
 */

let count = 0
let timer: ReturnType<typeof setInterval> | undefined

/**
 * Registers one reason to stay alive; call the returned function (once) when
 * it is gone.
 */
export function keepAlive(): () => void {
  if (count++ === 0) timer = setInterval(() => {}, 1 << 30)
  let done = false
  return () => {
    if (done) return
    done = true
    if (--count === 0) {
      clearInterval(timer)
      timer = undefined
    }
  }
}
