/** The email channel (SPEC 8) against a real SMTP server (smtp-server) through real nodemailer. */
import t from 'tap';
import { smtpServer, type Tap } from '../../helpers/smtp-server.js';
import { EmailChannel } from '../../../src/reactions/channels/email-channel.js';
import type { Delivery } from '../../../src/reactions/channels/types.js';

function channel(t: Tap, smtpUrl: string): EmailChannel {
  const ch = new EmailChannel({ smtpUrl, from: 'Audience <flows@audience.test>' });
  t.teardown(() => ch.close());
  return ch;
}

const delivery: Delivery = {
  sendId: 'snd_mail_1',
  org: 'acme',
  flowId: 'f1',
  variant: null,
  email: 'ada@example.com',
  eventId: 'evt_1',
  message: { channel: 'email', subject: 'Hi Ada', text: 'Enjoy Lisbon', html: '<p>Enjoy <b>Lisbon</b></p>' },
};

t.test('the SMTP server receives the message for the contact, Message-ID carrying the send id', async (t) => {
  const smtp = await smtpServer(t);
  const outcome = await channel(t, smtp.url).attempt(delivery);
  t.equal(outcome.kind, 'delivered');
  t.equal(smtp.mails.length, 1);
  const [mail] = smtp.mails;
  if (!mail) return;
  t.same(mail.to, ['ada@example.com']);
  t.equal(mail.from, 'flows@audience.test');
  t.match(mail.data, /^Subject: Hi Ada\r$/m);
  t.match(mail.data, /^Message-ID: <snd_mail_1@audience\.local>\r$/im);
  t.match(mail.data, /Enjoy Lisbon/);
  t.match(mail.data, /<p>Enjoy <b>Lisbon<\/b><\/p>/);
});

t.test('550 from the server: failed, no retry', async (t) => {
  const smtp = await smtpServer(t, { reject: 550 });
  t.match(await channel(t, smtp.url).attempt(delivery), { kind: 'failed', reason: /^SMTP 550/ });
  t.equal(smtp.mails.length, 0);
});

t.test('451 from the server: retry', async (t) => {
  const smtp = await smtpServer(t, { reject: 451 });
  t.match(await channel(t, smtp.url).attempt(delivery), { kind: 'retry', reason: /^SMTP 451/ });
});

t.test('no server listening: retry', async (t) => {
  t.match(await channel(t, 'smtp://127.0.0.1:1').attempt(delivery), { kind: 'retry', reason: /ECONNECTION|ESOCKET/ });
});
