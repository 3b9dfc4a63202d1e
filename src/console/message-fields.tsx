/** The Message part of the flow forms: the channel, its webhook URL or e-mail subject, and the template. */
import type { ReactNode } from 'react';
import type { Message } from '../generated/message';
import { parseTemplate, templateTextOf } from './message-template';

export interface MessageDraft {
  channel: Message['channel'];
  url: string;
  subject: string;
  template: string;
}

/** A saved message as the form edits it, or a new one with these defaults. */
export function draftOf(message: Message | undefined, defaults: { subject: string; template: string }): MessageDraft {
  return {
    channel: message?.channel ?? 'outbox',
    url: message?.channel === 'webhook' ? message.url : 'https://',
    subject: message?.channel === 'email' ? message.template.subject : defaults.subject,
    template: message ? templateTextOf(message) : defaults.template,
  };
}

/** The message of a draft; `text` instead of its template (a branch's or a variant's own, on the same channel, URL or subject). */
export function messageOf(draft: MessageDraft, text = draft.template): Message {
  const { channel, url, subject } = draft;
  return channel === 'email' ? { channel, template: { subject, text } } : channel === 'webhook' ? { channel, url, template: { body: text } } : { channel, template: parseTemplate(text) };
}

export function MessageFields({
  draft,
  onChange,
  templateData,
  children,
}: {
  draft: MessageDraft;
  onChange: (change: Partial<MessageDraft>) => void;
  /** What the template reads, as its label says (`contact, flow, variant`). */
  templateData: string;
  /** More of the fieldset, after the template (a preview). */
  children?: ReactNode;
}): ReactNode {
  const { channel, url, subject, template } = draft;
  return (
    <fieldset>
      <legend>Message</legend>
      <label className="inline">
        Channel{' '}
        <select value={channel} onChange={(e) => onChange({ channel: e.target.value as Message['channel'] })}>
          <option value="outbox">outbox (a JSON line in DATA_DIR/outbox)</option>
          <option value="webhook">webhook</option>
          <option value="email">e-mail</option>
        </select>
      </label>
      {channel === 'webhook' ? (
        <label>
          Webhook URL <input type="url" value={url} onChange={(e) => onChange({ url: e.target.value })} required />
        </label>
      ) : null}
      {channel === 'email' ? (
        <label>
          Subject <input value={subject} onChange={(e) => onChange({ subject: e.target.value })} required />
        </label>
      ) : null}
      <label>
        {channel === 'email' ? 'Text' : `Template (Liquid: ${templateData})`}
        <textarea value={template} onChange={(e) => onChange({ template: e.target.value })} rows={8} spellCheck={false} />
      </label>
      {children}
    </fieldset>
  );
}
