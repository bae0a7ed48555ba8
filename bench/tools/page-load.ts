/**
 * What each app of bench/browser/packed-app.ts loads in three Chromium tabs
 * (one closed once it leads): every JS file, its bytes and gzip -9 size.
 *
 *   npx tsx bench/tools/page-load.ts [election|family|broadcast-channel]
 *
 * @module
 */
import { APPS, appFolder, launch, loadApp } from '../browser/packed-app'

const only = process.argv[2] as keyof typeof APPS | undefined
const folder = await appFolder()
const browser = await launch()
try {
  for (const name of Object.keys(APPS) as Array<keyof typeof APPS>) {
    if (only && name !== only) continue
    const load = await loadApp(folder, browser, name)
    console.log(`\n== ${name}: ${load.files.length} files, ${load.min} B min, ${load.gzip} B gzip`)
    for (const f of load.files) console.log(`  ${String(f.gzip).padStart(6)} gz ${String(f.bytes).padStart(7)} B  ${f.name}`)
  }
} finally {
  await browser.close()
  folder.close()
}
