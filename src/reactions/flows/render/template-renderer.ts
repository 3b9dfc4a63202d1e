/**
 * Renders a run's messages on a worker thread (template-worker.ts), never on the thread that answers
 * HTTP: a costly template slows its own run, not lookups and collect. Limits per message (time, steps,
 * output, memory: render.ts), a render budget per run, and a watchdog: a worker that does not answer
 * a message in time (a template that defeats liquidjs's own limits) is stopped and replaced, and that
 * message fails; the run goes on with the next one.
 */
import type { Worker } from 'node:worker_threads';
import { spawnWorker } from '../../../core/spawn-worker.js';
import { assertNever } from '../../../core/domain.js';
import type { Decision, MessageToRender, RenderedDecision } from '../rules/decision.js';
import { DEFAULT_MESSAGE_LIMITS, limitsHint, type MessageLimits } from './render.js';
import type { FromTemplateWorker, RenderBatch, RenderResult } from './template-worker.js';

export type { RenderResult } from './template-worker.js';

export interface RendererLimits {
  message: MessageLimits;
  /** Render time all messages of one run may take together, ms. */
  runBudgetMs: number;
  /** How long the worker may go without answering one message before it is stopped and replaced, ms. */
  watchdogMs: number;
  /** The worker's heap: a template that exhausts it ends the worker, not the service. */
  heapMb: number;
}

export const DEFAULT_RENDERER_LIMITS: RendererLimits = {
  message: DEFAULT_MESSAGE_LIMITS,
  runBudgetMs: 10_000,
  watchdogMs: 2_000,
  heapMb: 256,
};

/**
 * Messages handed to the worker per post: copying 100,000 of them into one message took the service's
 * event loop hundreds of ms; this many take a few, and collect and lookups answer between posts.
 */
const POST_JOBS = 500;

type WorkerEvent = { message: Exclude<FromTemplateWorker, { type: 'ready' }> } | { stopped: Error };

interface Slot {
  worker: Worker;
  ready: Promise<void>;
  /** The batch in progress, if any. */
  listener: ((event: WorkerEvent) => void) | undefined;
}

export class RendererClosed extends Error {
  constructor() {
    super('the template renderer is closed');
    this.name = 'RendererClosed';
  }
}

export class TemplateRenderer {
  private slot: Slot | undefined;
  private queue: Promise<unknown> = Promise.resolve();
  private closed = false;
  private nextId = 1;

  constructor(private readonly limits: RendererLimits = DEFAULT_RENDERER_LIMITS) {}

  /** Starts the worker now, so the first run does not wait for it. */
  start(): void {
    if (!this.closed) this.slot ??= this.spawn();
  }

  /** One result per message, in order. Runs are rendered one after another. */
  render(jobs: MessageToRender[]): Promise<RenderResult[]> {
    const next = this.queue.then(() => this.renderAll(jobs));
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Ends the worker; a run still rendering fails with RendererClosed (its transaction rolls back). */
  async close(): Promise<void> {
    this.closed = true;
    const slot = this.slot;
    this.slot = undefined;
    if (slot) {
      slot.listener?.({ stopped: new RendererClosed() });
      await slot.worker.terminate();
    }
  }

  private async renderAll(jobs: MessageToRender[]): Promise<RenderResult[]> {
    const results: RenderResult[] = [];
    const started = performance.now();
    const budgetReason =
      `the run's render budget of ${this.limits.runBudgetMs} ms is used up, so this message was not rendered; ` +
      'make the templates cheaper or the trigger return fewer rows per run';
    while (results.length < jobs.length) {
      if (this.closed) throw new RendererClosed();
      const budgetMs = this.limits.runBudgetMs - (performance.now() - started);
      if (budgetMs <= 0) {
        results.push({ ok: false, reason: budgetReason });
        continue;
      }
      const slot = (this.slot ??= this.spawn());
      // A worker that cannot start is the service's fault, not the template's: the run fails and its
      // transaction rolls back, so its rows are decided again by the next run.
      await slot.ready.catch((error: unknown) => {
        throw this.closed ? new RendererClosed() : error;
      });
      const from = results.length;
      const posted = await this.runBatch(slot, { jobs: jobs.slice(from, from + POST_JOBS), budgetMs, budgetReason }, results);
      if (!posted) {
        // Some row's data cannot cross to the worker: render the rows before it, fail that one.
        const bad = firstUncloneable(jobs, from);
        if (bad === from || !(await this.runBatch(slot, { jobs: jobs.slice(from, bad), budgetMs, budgetReason }, results))) {
          results.push({ ok: false, reason: 'the template data of this row cannot be rendered (a value of the trigger row is not plain data)' });
        }
      }
    }
    return results;
  }

  /** Renders `batch` on the worker, appending to `results`; false when the batch could not be posted. */
  private runBatch(slot: Slot, batch: Pick<RenderBatch, 'jobs' | 'budgetMs' | 'budgetReason'>, results: RenderResult[]): Promise<boolean> {
    const id = this.nextId++;
    const end = results.length + batch.jobs.length;
    const { watchdogMs } = this.limits;
    return new Promise<boolean>((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const done = (posted: boolean) => {
        clearTimeout(timer);
        slot.listener = undefined;
        resolve(posted);
      };
      // The message in progress fails; the worker is replaced before the next one.
      const replace = (reason: string) => {
        this.discard(slot);
        results.push({ ok: false, reason });
        done(true);
      };
      const arm = () => {
        clearTimeout(timer);
        timer = setTimeout(
          () => replace(`the template did not finish within ${watchdogMs} ms, so its renderer was stopped; ${limitsHint(this.limits.message)}`),
          watchdogMs,
        );
      };
      slot.listener = (event) => {
        if ('stopped' in event) {
          if (event.stopped instanceof RendererClosed) {
            clearTimeout(timer);
            slot.listener = undefined;
            reject(event.stopped);
          } else replace(`the template renderer stopped while rendering this message (${event.stopped.message}); ${limitsHint(this.limits.message)}`);
          return;
        }
        if (event.message.id !== id) return;
        results.push(event.message.result);
        if (results.length >= end) done(true);
        else arm();
      };
      try {
        slot.worker.postMessage({ id, ...batch, limits: this.limits.message } satisfies RenderBatch);
      } catch {
        clearTimeout(timer);
        slot.listener = undefined;
        resolve(false);
        return;
      }
      arm();
    });
  }

  private spawn(): Slot {
    const worker = spawnWorker(import.meta.url, './template-worker', { resourceLimits: { maxOldGenerationSizeMb: this.limits.heapMb } });
    // The worker never keeps the process alive on its own; close() ends it.
    worker.unref();
    const slot: Slot = { worker, ready: Promise.resolve(), listener: undefined };
    slot.ready = new Promise<void>((ready, failed) => {
      const stopped = (error: Error) => {
        failed(error);
        if (this.slot === slot) this.slot = undefined;
        slot.listener?.({ stopped: error });
      };
      worker.on('message', (message: FromTemplateWorker) => {
        if (message.type === 'ready') ready();
        else slot.listener?.({ message });
      });
      worker.once('error', stopped);
      worker.once('exit', (code) => stopped(new Error(`the template worker exited (code ${code})`)));
    });
    // Awaited by the run that needs the worker; unobserved here.
    slot.ready.catch(() => undefined);
    return slot;
  }

  private discard(slot: Slot): void {
    if (this.slot === slot) this.slot = undefined;
    slot.listener = undefined;
    void slot.worker.terminate();
  }
}

function firstUncloneable(jobs: MessageToRender[], from: number): number {
  for (let i = from; i < jobs.length; i++) {
    try {
      structuredClone(jobs[i]);
    } catch {
      return i;
    }
  }
  return jobs.length;
}

/**
 * The run's decisions with their messages rendered: a `sent` decision gets its message, or becomes
 * `failed` with the reason its template did not render. The template data is dropped either way.
 */
export async function renderDecisions(renderer: Pick<TemplateRenderer, 'render'>, decisions: Decision[]): Promise<RenderedDecision[]> {
  const jobs = decisions.flatMap((d) => (d.outcome === 'sent' || d.outcome === 'deferred_quiet_hours' ? [d.template] : []));
  const results = jobs.length === 0 ? [] : await renderer.render(jobs);
  let next = 0;
  const nextResult = () => {
    const result = results[next++];
    if (result === undefined) throw new Error(`the renderer answered ${results.length} of ${jobs.length} messages`);
    return result;
  };
  return decisions.map((decision): RenderedDecision => {
    switch (decision.outcome) {
      case 'sent': {
        const { template: _rendered, ...entered } = decision;
        const result = nextResult();
        return result.ok ? { ...entered, message: result.message } : { ...entered, outcome: 'failed', reason: result.reason };
      }
      case 'deferred_quiet_hours': {
        const { template: _rendered, ...deferred } = decision;
        const result = nextResult();
        if (result.ok) return { ...deferred, message: result.message };
        const { dueAt: _due, ...entered } = deferred;
        return { ...entered, outcome: 'failed', reason: result.reason };
      }
      case 'entered':
      case 'no_identity':
      case 'failed':
      case 'duplicate':
      case 'suppressed':
      case 'backfill':
      case 'too_old':
      case 'unsubscribed':
      case 'excluded_by_segment':
      case 'reentry_blocked':
      case 'frequency_capped':
      case 'holdout':
        return decision;
      default:
        return assertNever(decision);
    }
  });
}
