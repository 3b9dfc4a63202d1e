/**
 * Message templates (SPEC 8), rendered with Liquid. The data: `event` (the trigger row, with `raw` the
 * parsed event and `properties` its own properties), `contact` (the profile), `flow`, `variant`.
 * A webhook body is either a string that must render to JSON, or a JSON value whose strings are
 * templates (no quoting to get right); outbox templates are JSON values too.
 */
import { Liquid, type Template } from 'liquidjs';
import type { RenderedMessage } from '../channels/types.js';
import { assertNever } from '../domain.js';
import type { Message } from '../generated/flow.js';

export interface TemplateData {
  event: Record<string, unknown>;
  contact: Record<string, unknown>;
  flow: { id: string; name: string };
  variant: { label: string } | null;
}

/** Raised for a template that does not parse or render; the send is decided `failed` with this reason. */
export class RenderFailed extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'RenderFailed';
  }
}

const liquid = new Liquid({
  // Templates read data members, never inherited ones (no constructor/prototype walking).
  ownPropertyOnly: true,
  strictFilters: true,
  // A template is data a flow author writes: bound its cost so a loop cannot stall the runner.
  renderLimit: 1000,
  memoryLimit: 16 * 1024 * 1024,
});

const parsed = new Map<string, Template[]>();
const PARSED_LIMIT = 10_000;

function render(source: string, data: TemplateData): string {
  // Most template strings of a JSON body are constants: no Liquid markup, nothing to render.
  if (!source.includes('{')) return source;
  let template = parsed.get(source);
  if (!template) {
    if (parsed.size >= PARSED_LIMIT) parsed.clear();
    template = liquid.parse(source);
    parsed.set(source, template);
  }
  return liquid.renderSync(template, data) as string;
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

export function renderMessage(message: Message, data: TemplateData): RenderedMessage {
  try {
    switch (message.channel) {
      case 'webhook': {
        const body = message.template.body;
        if (typeof body !== 'string') return { channel: 'webhook', url: message.url, body: renderValue(body, data) };
        const text = render(body, data);
        try {
          return { channel: 'webhook', url: message.url, body: JSON.parse(text) as unknown };
        } catch {
          throw new RenderFailed(`the webhook body does not render to JSON (use the json filter for values): ${text.slice(0, 200)}`);
        }
      }
      case 'email': {
        const { subject, text, html } = message.template;
        return {
          channel: 'email',
          subject: render(subject, data),
          text: render(text, data),
          ...(html === undefined ? {} : { html: render(html, data) }),
        };
      }
      case 'outbox':
        return { channel: 'outbox', content: renderValue(message.template, data) as Record<string, unknown> };
      default:
        return assertNever(message);
    }
  } catch (error) {
    if (error instanceof RenderFailed) throw error;
    throw new RenderFailed(`the template does not render: ${(error as Error).message}`);
  }
}
