/**
 * A NestJS job that runs once per tick however many instances of the app
 * run: `@Cron` (from @nestjs/schedule) fires it on every instance,
 * `client.jobs.once` lets one of them run it. @nestjs/schedule passes no
 * date to the method, so the slot is the tick's second, read from the clock
 * as it fires (a tick runs within milliseconds of its time: cut to the
 * schedule's unit — the second here, the day for a nightly job — it is the
 * scheduled time unless the tick comes a whole unit late).
 *
 * Decorators need `experimentalDecorators` (this folder's tsconfig.json):
 *
 *   npx tsx --tsconfig examples/jobs/nestjs/tsconfig.json examples/jobs/nestjs/main.ts zaris://localhost:7861/demo --id a --ticks 5
 */
import 'reflect-metadata'
import { parseArgs } from 'node:util'
import { Inject, Injectable, Module, type OnApplicationShutdown } from '@nestjs/common'
import { NestFactory } from '@nestjs/core'
import { Cron, ScheduleModule } from '@nestjs/schedule'
import { connect, type Client } from 'zaris'

const { values, positionals } = parseArgs({ allowPositionals: true, options: { id: { type: 'string' }, ticks: { type: 'string' } } })
const ZARIS = Symbol('zaris client')
const ticks = Number(values.ticks ?? Infinity)
let enough!: () => void
const ticked = new Promise<void>((resolve) => (enough = resolve))

@Injectable()
class ReportJob implements OnApplicationShutdown {
  readonly #calls = new Set<Promise<void>>()
  #fired = 0

  constructor(@Inject(ZARIS) private readonly zaris: Client) {}

  @Cron('* * * * * *', { name: 'report' })
  tick(): void {
    const slot = new Date(Math.floor(Date.now() / 1000) * 1000)
    const call = this.run(slot).finally(() => this.#calls.delete(call))
    this.#calls.add(call)
    if (++this.#fired === ticks) enough()
  }

  async run(slot: Date): Promise<void> {
    const result = await this.zaris.jobs.once('report', slot, async (lock) => {
      await this.zaris.put(`report:${slot.toISOString()}`, `written by ${this.zaris.id}`, { fence: lock })
      return 'written'
    })
    if (result.status === 'skipped') console.log(`${slot.toISOString()} skipped: ${result.state} by ${result.by}`)
    else console.log(`${slot.toISOString()} ${result.status} with token ${result.token}`)
  }

  async onApplicationShutdown(): Promise<void> {
    await Promise.all(this.#calls)
    await this.zaris.close()
  }
}

@Module({
  imports: [ScheduleModule.forRoot()],
  providers: [{ provide: ZARIS, useFactory: () => connect(positionals[0] ?? 'zaris://inproc/jobs', { id: values.id }) }, ReportJob],
})
class AppModule {}

const app = await NestFactory.createApplicationContext(AppModule, { logger: ['error', 'warn'] })
// Stop after the ticks asked for, or on Ctrl-C; the job lets its calls under way end first.
process.once('SIGINT', () => enough())
await ticked
await app.close()
