import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'
import { playwright } from '@vitest/browser-playwright'
import { CHROMIUM_ARGS, chromiumPath, freePortSync } from './test/browser-harness/chromium.ts'

const src = (path: string) => fileURLToPath(new URL(`./src/${path}`, import.meta.url))

/** `import 'zaris'` in tests, examples and the demo means this source tree. */
const alias = {
  'zaris/memory': src('adapters/memory.ts'),
  'zaris/indexeddb': src('adapters/indexeddb/index.ts'),
  'zaris/http': src('adapters/http/index.ts'),
  'zaris/server': src('server/index.ts'),
  'zaris/redis': src('adapters/redis/index.ts'),
  'zaris/etcd': src('adapters/etcd/index.ts'),
  'zaris/postgres': src('adapters/postgres/index.ts'),
  'zaris/file': src('adapters/file/index.ts'),
  'zaris/testing': src('testing.ts'),
  'zaris/web-locks': src('web-locks/index.ts'),
  'zaris/otel': src('otel/index.ts'),
  'zaris/elect': src('elect/index.ts'),
  'zaris/tabs': src('tabs/index.ts'),
  'zaris/conformance': fileURLToPath(new URL('./test/conformance/index.ts', import.meta.url)),
  zaris: src('index.ts'),
}

/** Test files a busy machine makes flaky (the demo's three tabs against 5 s waits): run after the rest, alone. */
const ALONE = ['test/demo/**/*.test.ts']
/** Test files at once (`ZARIS_TEST_WORKERS` overrides). */
const WORKERS = Number(process.env.ZARIS_TEST_WORKERS ?? 2)

export default defineConfig({
  resolve: { alias },
  test: {
    // Before any test file: find (or, as root, install) chromium, redis-server, etcd; else stop with the command to run.
    globalSetup: ['test/setup/prereqs.ts'],
    // Two node test files at a time (most of a file's time is waits on servers, timers and tabs: 2 workers
    // take ~60 % of the time on CI's 2 cores), then the demo's real tabs alone, then the browser files one
    // at a time (a 1 s TTL renewed in a page starved by four files at once was lost: idb conformance,
    // once in 4 runs). Projects of one group must agree on maxWorkers.
    projects: [
      {
        extends: true,
        test: {
          name: 'node',
          include: ['test/**/*.test.ts'],
          // test/long: the runs too long for `npm test` (20-minute budget on CI); `npm run test:faults` runs them.
          exclude: ['test/**/*.browser.test.ts', ...ALONE, ...(process.env.ZARIS_FAULT_SCALE ? [] : ['test/long/**'])],
          environment: 'node',
          testTimeout: 20_000,
          hookTimeout: 30_000,
          maxWorkers: WORKERS,
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'alone',
          include: ALONE,
          environment: 'node',
          testTimeout: 20_000,
          hookTimeout: 30_000,
          maxWorkers: 1,
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'browser',
          maxWorkers: 1,
          sequence: { groupOrder: 2 },
          include: ['test/**/*.browser.test.ts'],
          // A zaris node for test/http/node.browser.test.ts, with CORS for the test page.
          globalSetup: ['test/http/browser-setup.ts'],
          // Page code mutated in place by Stryker: the mutant it runs is switched on in the test page too.
          setupFiles: ['test/browser-harness/mutant-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 30_000,
          browser: {
            enabled: true,
            headless: true,
            // A port of its own, strictly: the node of test/http/browser-setup.ts allows exactly this origin.
            api: { port: freePortSync(), strictPort: true },
            // The Chromium the prerequisite check found (Debian's, ZARIS_CHROMIUM or Playwright's), with the harness's flags.
            provider: playwright({ launchOptions: { executablePath: chromiumPath(), args: CHROMIUM_ARGS } }),
            instances: [{ browser: 'chromium' }],
          },
        },
      },
    ],
  },
})
