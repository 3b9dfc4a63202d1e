/**
 * The rules a message step (rules/step-message.ts) and a deferred send at the end of quiet hours
 * (rules/release-check.ts) are decided by, pure: the order (suppression, consent, caps, quiet hours) and
 * that a send counts for the next one's caps.
 */
import t from 'tap';
import { releaseCheck } from '../../../src/reactions/flows/rules/release-check.js';
import { SendCounts } from '../../../src/reactions/flows/rules/frequency-caps.js';
import { stepMessage } from '../../../src/reactions/flows/rules/step-message.js';

const NOW = Date.UTC(2026, 0, 15, 12);
const QUIET_END = NOW + 3_600_000;

/** The state of three contacts: erased with suppress, unsubscribed, and in quiet hours; caps of one webhook a day. */
function state() {
  return {
    suppressed: new Set(['erased@x.test']),
    unsubscribed: new Map([['gone@x.test', [{ topic: 'news', source: 'link' }]]]),
    sendCounts: new SendCounts({ org: [{ channel: 'webhook', maxSends: 1, withinSeconds: 86_400 }], flowId: 'f', transactional: false }, new Map()),
    quietUntil: (email: string) => (email === 'night@x.test' ? { at: QUIET_END, zone: 'Asia/Tokyo' } : null),
  };
}

t.test('a message step: suppressed and unsubscribed leave, a capped message is skipped, quiet hours hold, else it is sent and counted', async (t) => {
  const s = state();
  t.match(stepMessage('erased@x.test', 'webhook', NOW, s), { kind: 'exit', outcome: 'suppressed' });
  t.match(stepMessage('gone@x.test', 'webhook', NOW, s), { kind: 'exit', outcome: 'unsubscribed', reason: /topic news \(link\)/ });
  t.same(stepMessage('night@x.test', 'webhook', NOW, s), { kind: 'hold', until: QUIET_END });
  t.same(stepMessage('day@x.test', 'webhook', NOW, s), { kind: 'send' });
  t.match(stepMessage('day@x.test', 'webhook', NOW, s), { kind: 'skip', outcome: 'frequency_capped' }, 'the first send counts for the second');
  t.same(stepMessage('day@x.test', 'email', NOW, s), { kind: 'send' }, 'a cap of another channel does not count');
});

t.test('suppression goes before consent, consent before caps, caps before quiet hours', async (t) => {
  const s = state();
  s.unsubscribed.set('erased@x.test', [{ topic: 'news', source: 'link' }]);
  t.match(stepMessage('erased@x.test', 'webhook', NOW, s), { outcome: 'suppressed' });
  s.sendCounts.add('night@x.test', 'webhook', NOW - 1000);
  t.match(stepMessage('night@x.test', 'webhook', NOW, s), { kind: 'skip', outcome: 'frequency_capped' });
});

t.test('a deferred send released: the same order, and a release counts for the next release', async (t) => {
  const s = state();
  const send = (email: string, sendId = email) => ({ sendId, email, channel: 'webhook' as const });
  t.same(releaseCheck(send('erased@x.test'), NOW, s), { sendId: 'erased@x.test', outcome: 'suppressed', reason: 'at the end of quiet hours: the contact was erased with suppress' });
  t.match(releaseCheck(send('gone@x.test'), NOW, s), { outcome: 'unsubscribed', reason: /^at the end of quiet hours: .*topic news/ });
  t.same(releaseCheck(send('day@x.test', 'a'), NOW, s), { sendId: 'a', outcome: 'sent', reason: null });
  t.match(releaseCheck(send('day@x.test', 'b'), NOW, s), { sendId: 'b', outcome: 'frequency_capped', reason: /^at the end of quiet hours: the org's frequencyCaps/ });
});
