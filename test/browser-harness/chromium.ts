/**
 * How the tests launch Chromium: Debian's build (no downloads here), or the
 * one `ZARIS_CHROMIUM` names. Shared by the vitest browser project and the
 * multi-tab Playwright tests so both run the same browser the same way.
 */
import type { LaunchOptions } from 'playwright'

/** Flags that keep a headless Chromium quiet and offline. */
export const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]

/** Launch options for Chromium, with extra flags or default flags to drop (throttling tests drop Playwright's). */
export function chromiumLaunchOptions(extra: { args?: string[]; ignoreDefaultArgs?: string[] } = {}): LaunchOptions {
  return {
    executablePath: process.env.ZARIS_CHROMIUM ?? '/usr/bin/chromium',
    args: [...CHROMIUM_ARGS, ...(extra.args ?? [])],
    ...(extra.ignoreDefaultArgs ? { ignoreDefaultArgs: extra.ignoreDefaultArgs } : {}),
  }
}
