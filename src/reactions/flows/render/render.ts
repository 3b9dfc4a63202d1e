/**
 * Message templates (SPEC 8), rendered with Liquid. The data: `event` (the trigger row, with `raw` the
 * parsed event and `properties` its own properties), `contact` (the profile), `flow`, `variant`.
 * A webhook body is either a string that must render to JSON, or a JSON value whose strings are
 * templates (no quoting to get right); outbox templates are JSON values too.
 *
 * This module renders synchronously and runs inside the template worker (template-worker.ts), never on
 * the thread that answers HTTP: the limits below bound one message, the worker's watchdog bounds the rest.
 */
import { Liquid, type Template } from 'liquidjs';
import type { RenderedMessage } from '../../channels/types.js';
import { assertNever } from '../../../core/domain.js';
import type { Message } from '../../../generated/message.js';
import type { TemplateData } from '../rules/decision.js';


/** What one message may cost; every template string of the message draws on the same allowance. */
export interface MessageLimits {
  /** Render time of the whole message, ms (liquidjs renderLimit, given what is left per string). */
  timeMs: number;
  /** Tags, outputs and loop iterations rendered for the whole message. */
  steps: number;
  /** Characters the whole message renders to. */
  outputChars: number;
  /** liquidjs memoryLimit for one template string (characters and array items it may allocate). */
  memory: number;
}

export const DEFAULT_MESSAGE_LIMITS: MessageLimits = {
  timeMs: 250,
  steps: 50_000,
  outputChars: 256 * 1024,
  memory: 4 * 1024 * 1024,
};

/** Characters of one template string liquidjs parses (a flow definition is admin input, but still input). */
const PARSE_LIMIT = 256 * 1024;

/** Raised for a template that does not parse or render; the send is decided `failed` with this reason. */
export class RenderFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'RenderFailed';
  }
}

/** Thrown from inside liquidjs when a message goes over its steps or output allowance. */
class LimitExceeded extends Error {}

const liquid = new Liquid({
  // Templates read data members, never inherited ones (no constructor/prototype walking).
  ownPropertyOnly: true,
  strictFilters: true,
  // No file system, by construction: include/render/layout look only in this empty in-memory map, so
  // `{% include 'data/admin.key' %}` finds nothing instead of reading the file (liquidjs's default root
  // is the working directory). Partials, if flows ever get them, come from the flow definition.
  templates: {},
  parseLimit: PARSE_LIMIT,
});

/** The allowance of the message being rendered (rendering is synchronous: one message at a time). */
let current: { steps: number; outputChars: number; deadline: number; limits: MessageLimits } | undefined;

// Every block liquidjs renders (the template, each loop iteration, each branch taken) goes through
// renderTemplates: counting there bounds loop iterations, and the emitter shows the output so far.
const renderTemplates = liquid.renderer.renderTemplates.bind(liquid.renderer);
liquid.renderer.renderTemplates = function* (templates, ctx, emitter) {
  if (current) {
    current.steps += Math.max(1, templates.length);
    if (current.steps > current.limits.steps) throw new LimitExceeded(`loop iterations limit exceeded (${current.limits.steps} steps)`);
    if (emitter && emitter.buffer.length > current.outputChars) throw new LimitExceeded(`output size limit exceeded (${current.limits.outputChars} characters)`);
  }
  return yield* renderTemplates(templates, ctx, emitter);
};

const parsed = new Map<string, Template[]>();
const PARSED_LIMIT = 10_000;

function render(source: string, data: TemplateData): string {
  const budget = current!;
  // Most template strings of a JSON body are constants: no Liquid markup, nothing to render.
  if (!source.includes('{')) return spend(budget, source);
  let template = parsed.get(source);
  if (!template) {
    if (parsed.size >= PARSED_LIMIT) parsed.clear();
    // Parsing (bounded by parseLimit) is not render time: a template cached by an earlier row must
    // meet the same time limit as a new one, so the same template fails or renders on every row.
    const parsing = performance.now();
    template = liquid.parse(source);
    budget.deadline += performance.now() - parsing;
    parsed.set(source, template);
  }
  const left = budget.deadline - performance.now();
  if (left <= 0) throw new LimitExceeded(`template render limit exceeded (${budget.limits.timeMs} ms)`);
  const output = liquid.renderSync(template, data, { renderLimit: left, memoryLimit: budget.limits.memory }) as unknown;
  return spend(budget, String(output));
}

function spend(budget: NonNullable<typeof current>, output: string): string {
  budget.outputChars -= output.length;
  if (budget.outputChars < 0) throw new LimitExceeded(`output size limit exceeded (${budget.limits.outputChars} characters)`);
  return output;
}

/** Every string inside a JSON value rendered; the structure kept. */
function renderValue(value: unknown, data: TemplateData): unknown {
  if (typeof value === 'string') return render(value, data);
  if (Array.isArray(value)) return value.map((item) => renderValue(item, data));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, renderValue(v, data)]));
  }
  return value;
}

export function renderMessage(message: Message, data: TemplateData, limits: MessageLimits = DEFAULT_MESSAGE_LIMITS): RenderedMessage {
  current = { steps: 0, outputChars: limits.outputChars, deadline: performance.now() + limits.timeMs, limits };
  try {
    switch (message.channel) {
      case 'webhook': {
        const body = message.template.body;
        let rendered: unknown;
        if (typeof body !== 'string') rendered = renderValue(body, data);
        else {
          const text = render(body, data);
          try {
            rendered = JSON.parse(text) as unknown;
          } catch {
            throw new RenderFailed(`the webhook body does not render to JSON (use the json filter for values): ${text.slice(0, 200)}`);
          }
        }
        const link = data.unsubscribe_url;
        if (link === null) return { channel: 'webhook', url: message.url, body: rendered };
        // The receiver gets the link whatever the template says: in a JSON object body (unless the template
        // set the member itself) and in a List-Unsubscribe header (webhook-channel.ts).
        const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === 'object' && !Array.isArray(value);
        const withLink = isObject(rendered) && !Object.hasOwn(rendered, 'unsubscribe_url') ? { ...rendered, unsubscribe_url: link } : rendered;
        return { channel: 'webhook', url: message.url, body: withLink, unsubscribeUrl: link };
      }
      case 'email': {
        const { subject, text, html } = message.template;
        return {
          channel: 'email',
          subject: render(subject, data),
          text: render(text, data),
          ...(html === undefined ? {} : { html: render(html, data) }),
          ...(data.unsubscribe_url === null ? {} : { unsubscribeUrl: data.unsubscribe_url }),
        };
      }
      case 'outbox':
        return { channel: 'outbox', content: renderValue(message.template, data) as Record<string, unknown> };
      default:
        return assertNever(message);
    }
  } catch (error) {
    if (error instanceof RenderFailed) throw error;
    const text = (error as Error).message;
    // Deep nesting overflows the worker's stack: a limit like the others, caught like them.
    if (/limit exceeded|Maximum call stack size exceeded/.test(text)) throw new RenderFailed(`the template is over a limit: ${text}; ${limitsHint(limits)}`);
    if (/ENOENT/.test(text)) throw new RenderFailed(`the template does not render: include, render and layout cannot read files (templates have no file system and no partials): ${text}`);
    throw new RenderFailed(`the template does not render: ${text}`);
  } finally {
    current = undefined;
  }
}

export function limitsHint(limits: MessageLimits): string {
  return (
    `a message may take ${limits.timeMs} ms, ${limits.steps} steps (tags and loop iterations) and ` +
    `${limits.outputChars} characters of output; loop over less data or simplify the template`
  );
}
