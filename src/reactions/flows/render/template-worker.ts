/**
 * The template worker: renders a run's messages (render.ts) on its own thread, so a costly template
 * never holds the thread that answers HTTP. One batch (one run) at a time; a reply per message, so the
 * main side's watchdog knows which message a stuck worker was on.
 */
import { parentPort } from 'node:worker_threads';
import type { RenderedMessage } from '../../channels/types.js';
import type { MessageToRender } from '../rules/decision.js';
import { type MessageLimits, RenderFailed, renderMessage } from './render.js';

export interface RenderBatch {
  id: number;
  jobs: MessageToRender[];
  limits: MessageLimits;
  /** Render time this batch may still use, ms. */
  budgetMs: number;
  /** What to say when the budget runs out (the run's budget, as configured). */
  budgetReason: string;
}

export type RenderResult = { ok: true; message: RenderedMessage } | { ok: false; reason: string };

export type FromTemplateWorker = { type: 'ready' } | { type: 'rendered'; id: number; index: number; result: RenderResult };

function renderOne(job: MessageToRender, limits: MessageLimits): RenderResult {
  try {
    return { ok: true, message: renderMessage(job.message, job.data, limits) };
  } catch (error) {
    return { ok: false, reason: error instanceof RenderFailed ? error.reason : `the template does not render: ${(error as Error).message}` };
  }
}

function renderBatch(batch: RenderBatch, post: (message: FromTemplateWorker) => void): void {
  const started = performance.now();
  for (const [index, job] of batch.jobs.entries()) {
    const left = batch.budgetMs - (performance.now() - started);
    let result: RenderResult;
    if (left <= 0) result = { ok: false, reason: batch.budgetReason };
    else {
      result = renderOne(job, { ...batch.limits, timeMs: Math.min(batch.limits.timeMs, left) });
      // A message cut short by the end of the run's budget is over the budget, not over its own limit.
      if (!result.ok && performance.now() - started >= batch.budgetMs) result = { ok: false, reason: batch.budgetReason };
    }
    post({ type: 'rendered', id: batch.id, index, result });
  }
}

const port = parentPort;
if (port) {
  port.on('message', (batch: RenderBatch) => renderBatch(batch, (message) => port.postMessage(message)));
  port.postMessage({ type: 'ready' } satisfies FromTemplateWorker);
}
