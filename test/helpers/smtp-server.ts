/** A real SMTP server (smtp-server) on 127.0.0.1, port 0, recording what it accepts. */
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

export interface Tap {
  teardown(fn: () => unknown): void;
}

export interface Mail {
  from: string;
  to: string[];
  data: string;
}

export interface SmtpServerOptions {
  /** RCPT TO answers with this SMTP code. */
  reject?: number;
  /** The 250 after DATA comes this long after the message arrived (a server busy with each message). */
  answerDelayMs?: () => number;
  /** Called with the count of messages arrived so far, as each arrives (before it is answered). */
  onMail?: (count: number) => void;
  /**
   * Accept addresses longer than RFC 5321's path (smtp-server refuses over 253 characters): the schemas
   * let a contact's address reach 320, and a test about what such a message carries needs it delivered.
   */
  longAddresses?: boolean;
}

export async function smtpServer(t: Tap, options: SmtpServerOptions = {}): Promise<{ url: string; mails: Mail[] }> {
  const { reject, answerDelayMs, onMail, longAddresses } = options;
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'], // its built-in certificate is self-signed; plain SMTP on loopback
    logger: false,
    ...(longAddresses ? { lenientAddressParsing: true } : {}),
    onRcptTo(address, _session, callback) {
      if (!reject) return callback();
      callback(Object.assign(new Error(`rejected ${address.address}`), { responseCode: reject }));
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => {
        const from = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
        const to = session.envelope.rcptTo.map((a) => a.address);
        mails.push({ from, to, data: Buffer.concat(chunks).toString('utf8') });
        onMail?.(mails.length);
        if (answerDelayMs) setTimeout(() => callback(), answerDelayMs());
        else callback();
      });
    },
  });
  // A client killed mid-session resets its connection: not the server's failure.
  server.on('error', () => undefined);
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  t.teardown(() => new Promise<void>((ok) => server.close(() => ok())));
  const { port } = server.server.address() as AddressInfo;
  return { url: `smtp://127.0.0.1:${port}`, mails };
}
