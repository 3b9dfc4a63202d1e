/**
 * The email channel (SPEC 8): one SMTP message per delivery through nodemailer (SMTP_URL).
 * Message-ID carries the send id, so a retry that the server had in fact accepted is recognisable as
 * the same message downstream.
 */
import nodemailer, { type NodemailerError, type Transporter } from 'nodemailer';
import type { AttemptOutcome, Channel, Delivery } from './types.js';

export interface EmailChannelOptions {
  /** e.g. smtp://user:pass@mail.example.com:587 (nodemailer's URL form). */
  smtpUrl: string;
  /** Default: Audience <audience@audience.local>. */
  from?: string;
}

export class EmailChannel implements Channel {
  private readonly transport: Transporter;
  private readonly from: string;

  constructor(opts: EmailChannelOptions) {
    this.transport = nodemailer.createTransport(opts.smtpUrl);
    this.from = opts.from ?? 'Audience <audience@audience.local>';
  }

  async attempt(delivery: Delivery): Promise<AttemptOutcome> {
    const { message } = delivery;
    if (message.channel !== 'email') return { kind: 'failed', reason: `not an email message: ${message.channel}` };
    try {
      const info = await this.transport.sendMail({
        from: this.from,
        to: delivery.email,
        subject: message.subject,
        text: message.text,
        ...(message.html === undefined ? {} : { html: message.html }),
        messageId: `<${delivery.sendId}@audience.local>`,
        // One-click unsubscribe (RFC 8058; RFC 2369 for the link): mailbox providers require both from bulk senders.
        ...(message.unsubscribeUrl === undefined
          ? {}
          : { headers: { 'List-Unsubscribe': `<${message.unsubscribeUrl}>`, 'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click' } }),
      });
      return { kind: 'delivered', detail: String(info.response ?? '') };
    } catch (err) {
      return classify(err as NodemailerError);
    }
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

/**
 * SMTP's own reply classes decide: 5xx is permanent, 4xx transient (RFC 5321). nodemailer sets
 * `permanent` from the reply code (503, a session-state error, counts as transient). No reply at all
 * means the connection failed: worth another try.
 */
function classify(err: NodemailerError): AttemptOutcome {
  const reason = err.responseCode
    ? `SMTP ${err.responseCode}: ${err.response ?? err.message}`
    : `${err.code ?? 'error'}: ${err.message}`;
  return err.permanent ? { kind: 'failed', reason } : { kind: 'retry', reason };
}
