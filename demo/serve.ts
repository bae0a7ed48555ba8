/**
 * `npm run demo`: a zaris node on :7861 (the "local node" store, with CORS for
 * the page) and the Vite dev server for the page. Ctrl-C stops both.
 */
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { createServer } from 'vite'

const root = fileURLToPath(new URL('..', import.meta.url))
const port = Number(process.env.DEMO_PORT ?? 5173)
const origins = [`http://localhost:${port}`, `http://127.0.0.1:${port}`]

const node = spawn(
  process.execPath,
  ['--import', 'tsx', 'src/cli/zaris.ts', 'serve', '--port', '7861', ...origins.flatMap((o) => ['--cors', o])],
  { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] },
)
node.on('exit', (code) => {
  if (code) console.log(`zaris node exited (${code}); the "Local zaris node" store will be unavailable (is port 7861 taken?)`)
})

const vite = await createServer({ configFile: fileURLToPath(new URL('./vite.config.ts', import.meta.url)), server: { port, strictPort: true } })
await vite.listen()
console.log(`\n  zaris demo: http://localhost:${port}/   (open it in several tabs)\n`)

const stop = async () => {
  node.kill('SIGTERM')
  await vite.close()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
