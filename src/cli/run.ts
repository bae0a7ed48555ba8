/**
 * What a command is, once its arguments are checked: a run on a connected
 * client that prints through an {@link Io} and resolves its exit code (0 or
 * 1 for the inspect commands; a command run under a hold exits with its own).
 *
 * @module
 */
import type { Client } from '../core/client'

/** Where a command prints: results to `out`, notes and errors to `err`. */
export interface Io {
  out(text: string): void
  err(text: string): void
}

/** A command's run, once its arguments are checked. */
export type Run = (client: Client, io: Io) => Promise<number>
