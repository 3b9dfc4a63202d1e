/**
 * The webhook channel (SPEC 8): POST the rendered JSON, signed per Standard Webhooks. webhook-id is the
 * send id on every retry, so the receiver can drop a repeat of a message it already processed.
 */
import { type Agent, request } from 'undici';
import type { Clock } from '../../core/context.js';
import { FORBIDDEN_TARGET, checkWebhookUrl, createGuardedAgent } from './target-guard.js';
import type { AttemptOutcome, Channel, Delivery } from './types.js';
import { signingHeaders } from './webhook-signing.js';

export interface WebhookChannelOptions {
  /** Let flows target loopback, private and link-local addresses (self-hosted receivers, tests). */
  allowPrivate: boolean;
  /** Deadline of one attempt, connect to last body byte. A slow receiver is retried, not waited on. */
  timeoutMs: number;
  secretFor(org: string): string;
  clock: Clock;
}

export class WebhookChannel implements Channel {
  private readonly agent: Agent;

  constructor(private readonly opts: WebhookChannelOptions) {
    this.agent = createGuardedAgent({ allowPrivate: opts.allowPrivate, connectTimeoutMs: opts.timeoutMs });
  }

  async attempt(delivery: Delivery): Promise<AttemptOutcome> {
    const { message } = delivery;
    if (message.channel !== 'webhook') return { kind: 'failed', reason: `not a webhook message: ${message.channel}` };
    const refused = checkWebhookUrl(message.url, this.opts.allowPrivate);
    if (refused) return { kind: 'failed', reason: `target refused: ${refused}` };

    const body = JSON.stringify(message.body);
    const timestamp = Math.floor(this.opts.clock.now() / 1000);
    try {
      const res = await request(message.url, {
        method: 'POST',
        dispatcher: this.agent,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'audience-webhooks/1',
          ...signingHeaders(this.opts.secretFor(delivery.org), delivery.sendId, timestamp, body),
          ...(message.unsubscribeUrl === undefined ? {} : { 'list-unsubscribe': `<${message.unsubscribeUrl}>` }),
        },
        body,
        signal: AbortSignal.timeout(this.opts.timeoutMs),
      });
      // Read the body to its end (or a bounded part of it) so the connection goes back to the pool.
      await res.body.dump();
      return classify(res.statusCode, res.headers['retry-after']);
    } catch (err) {
      if (isForbiddenTarget(err)) return { kind: 'failed', reason: `target refused: ${(err as Error).message}` };
      return { kind: 'retry', reason: `network: ${describe(err)}` };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

function classify(status: number, retryAfter: string | string[] | undefined): AttemptOutcome {
  if (status >= 200 && status < 300) return { kind: 'delivered', detail: `HTTP ${status}` };
  if (status === 429 || status >= 500) {
    const retryAfterMs = status === 429 || status === 503 ? retryAfterSeconds(retryAfter) : undefined;
    return retryAfterMs === undefined
      ? { kind: 'retry', reason: `HTTP ${status}` }
      : { kind: 'retry', reason: `HTTP ${status}`, retryAfterMs };
  }
  // Redirects are not followed (a 3xx could point anywhere, past the target guard): like other 4xx, final.
  return { kind: 'failed', reason: `HTTP ${status}` };
}

/** Retry-After in delay-seconds form; the HTTP-date form is ignored (backoff still applies). */
function retryAfterSeconds(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (raw === undefined || !/^\d+$/.test(raw.trim())) return undefined;
  return Number(raw.trim()) * 1000;
}

/** undici may wrap the connector's error; look through the cause chain. */
function isForbiddenTarget(err: unknown): boolean {
  for (let e = err; e instanceof Error; e = e.cause) {
    if ((e as NodeJS.ErrnoException).code === FORBIDDEN_TARGET) return true;
  }
  return false;
}

function describe(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  // Node errors carry a string code (ECONNREFUSED); the timeout's DOMException only a name (TimeoutError).
  const code = (err as { code?: unknown }).code;
  return `${typeof code === 'string' ? code : err.name}: ${err.message}`;
}
