/**
 * The outbox channel (SPEC 8), the embedded default: one JSON line per message in
 * DATA_DIR/outbox/<org>.jsonl, so a new user sees messages without a mail server.
 *
 * Exactly once by sendId: before appending, the org's set of written sendIds is consulted. The set is
 * loaded from the file the first time an org is touched in this process, which is cheap because the
 * outbox is a demo/dev sink that stays small; a deployment with volume uses email or webhook instead.
 * One OutboxChannel per process and directory: the set is the only guard between writers.
 *
 * An erasure (privacy/erasure.ts) takes the contact's lines out (`eraseContact`): the file is a copy of
 * the address and of every message it was sent, so it is rewritten like the database rows are deleted.
 */
import { mkdir, open, readFile, rename, truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { normalizeEmail } from '../../core/domain.js';
import { syncDirectory } from '../../core/sync-directory.js';
import type { AttemptOutcome, Channel, Delivery } from './types.js';

export interface OutboxLine {
  sendId: string;
  flowId: string;
  variant: string | null;
  email: string;
  eventId: string;
  channel: 'outbox';
  content: Record<string, unknown>;
}

/** Org slugs are validated where orgs are created; this keeps a bad one from naming another path. */
const SLUG = /^[A-Za-z0-9_-]+$/;

export class OutboxChannel implements Channel {
  /** Per org: the sendIds already in its file. A promise, so concurrent first touches load once. */
  private readonly written = new Map<string, Promise<Set<string>>>();
  /** Per org: the tail of its write chain; lines written to one file never interleave. */
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly opts: { dir: string }) {}

  attempt(delivery: Delivery): Promise<AttemptOutcome> {
    return this.inTurn(delivery.org, () => this.writeLine(delivery));
  }

  /**
   * Takes every line of `email` out of the org's file; resolves with how many went. It waits its turn in
   * the org's write chain, so an append queued before it is in the file it rewrites and one queued after
   * it goes to the new file: none is lost. The kept lines are written to `<org>.jsonl.tmp`, synced and
   * renamed over the file, and the folder synced: a crash leaves the old file or the new one, whole.
   */
  eraseContact(org: string, email: string): Promise<number> {
    return this.inTurn(org, () => this.removeLines(org, normalizeEmail(email)));
  }

  /** Runs `work` after everything queued for the org's file so far; a failure does not stop the chain. */
  private inTurn<T>(org: string, work: () => Promise<T>): Promise<T> {
    const run = (this.queues.get(org) ?? Promise.resolve()).then(work);
    this.queues.set(org, run.catch(() => undefined));
    return run;
  }

  private async removeLines(org: string, email: string): Promise<number> {
    // Nothing was ever written for a name that is not a slug (writeLine refuses it).
    if (!SLUG.test(org)) return 0;
    const file = join(this.opts.dir, `${org}.jsonl`);
    // Loading first cuts a torn last line, which could not be parsed below.
    await this.sendIds(org, file);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 0;
      throw err;
    }
    const lines = text.split('\n').filter(Boolean);
    const kept = lines.filter((line) => normalizeEmail(String((JSON.parse(line) as OutboxLine).email)) !== email);
    if (kept.length === lines.length) return 0;
    const temporary = `${file}.tmp`;
    const fh = await open(temporary, 'w');
    try {
      await fh.writeFile(kept.map((line) => `${line}\n`).join(''));
      await fh.datasync();
    } finally {
      await fh.close();
    }
    await rename(temporary, file);
    await syncDirectory(this.opts.dir);
    // The erased sendIds stay in the set: a repeat of one of them is answered delivered, not written again.
    return lines.length - kept.length;
  }

  private async writeLine(delivery: Delivery): Promise<AttemptOutcome> {
    const { message } = delivery;
    if (message.channel !== 'outbox') return { kind: 'failed', reason: `not an outbox message: ${message.channel}` };
    if (!SLUG.test(delivery.org)) return { kind: 'failed', reason: `bad org slug: ${delivery.org}` };
    const file = join(this.opts.dir, `${delivery.org}.jsonl`);
    try {
      const written = await this.sendIds(delivery.org, file);
      if (written.has(delivery.sendId)) return { kind: 'delivered', detail: 'already in outbox' };
      const line: OutboxLine = {
        sendId: delivery.sendId,
        flowId: delivery.flowId,
        variant: delivery.variant,
        email: delivery.email,
        eventId: delivery.eventId,
        channel: 'outbox',
        content: message.content,
      };
      const fh = await open(file, 'a');
      try {
        await fh.write(JSON.stringify(line) + '\n');
        // Only a line on disk counts as delivered: the runner records the send after this answer.
        await fh.datasync();
      } finally {
        await fh.close();
      }
      written.add(delivery.sendId);
      return { kind: 'delivered' };
    } catch (err) {
      // The file may now end in a torn line: reload (and repair) it on the next attempt.
      this.written.delete(delivery.org);
      return { kind: 'retry', reason: `outbox write: ${(err as Error).message}` };
    }
  }

  private sendIds(org: string, file: string): Promise<Set<string>> {
    let loaded = this.written.get(org);
    if (!loaded) {
      loaded = loadSendIds(this.opts.dir, file);
      this.written.set(org, loaded);
      loaded.catch(() => this.written.delete(org));
    }
    return loaded;
  }
}

/**
 * Reads the sendIds of a file. A last line without its newline is a write cut short by a crash (never
 * answered as delivered, so it will be retried): it is cut off, or the next line would be glued to it.
 */
async function loadSendIds(dir: string, file: string): Promise<Set<string>> {
  await mkdir(dir, { recursive: true });
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Set();
    throw err;
  }
  const end = text.lastIndexOf('\n') + 1;
  if (end < text.length) await truncate(file, Buffer.byteLength(text.slice(0, end)));
  const ids = new Set<string>();
  for (const line of text.slice(0, end).split('\n')) {
    if (line) ids.add((JSON.parse(line) as OutboxLine).sendId);
  }
  return ids;
}
