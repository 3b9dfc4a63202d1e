/** A flow message's template as the console's forms edit it: text in a textarea, and back. */
import type { Message } from '../generated/message';

/** A saved message's template as the form edits it. */
export function templateTextOf(message: Message): string {
  if (message.channel === 'email') return message.template.text;
  const body = message.channel === 'webhook' ? message.template.body : message.template;
  return typeof body === 'string' ? body : JSON.stringify(body, null, 2);
}

/** The outbox channel takes a JSON object whose strings are templates; anything else is sent as text. */
export function parseTemplate(text: string): Record<string, unknown> {
  try {
    const value = JSON.parse(text) as unknown;
    if (value && typeof value === 'object' && !Array.isArray(value)) return value as Record<string, unknown>;
  } catch {
    // not JSON: kept as one text member
  }
  return { text };
}
