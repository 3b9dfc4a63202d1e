/** The frequency-cap arithmetic (frequency-caps.ts) on random histories: never over a cap, never refused below one. */
import fc from 'fast-check';
import t from 'tap';
import type { ChannelName } from '../../../src/reactions/channels/types.js';
import type { FrequencyCaps } from '../../../src/generated/org.js';
import { lookbackMs, type PastSend, SendCounts } from '../../../src/reactions/flows/rules/frequency-caps.js';

const channel = fc.constantFrom<ChannelName>('email', 'webhook', 'outbox');
const cap = fc.record({ maxSends: fc.integer({ min: 1, max: 4 }), withinSeconds: fc.integer({ min: 60, max: 600 }) });
const orgCap = fc
  .record({ channel: fc.option(channel, { nil: undefined }), maxSends: fc.integer({ min: 1, max: 4 }), withinSeconds: fc.integer({ min: 60, max: 600 }) })
  .map(({ channel, ...c }): FrequencyCaps[number] => (channel === undefined ? c : { ...c, channel }));
/** Decision attempts: which flow, on which channel, after how many seconds. */
const attempt = fc.record({ flow: fc.constantFrom('a', 'b', 'tx'), channel, gapSeconds: fc.integer({ min: 0, max: 200 }) });

t.test('accepted sends never exceed a cap in any window, and a refusal always has a cap at its limit', async (t) => {
  fc.assert(
    fc.property(fc.array(orgCap, { maxLength: 3 }), fc.option(cap, { nil: undefined }), fc.array(attempt, { maxLength: 60 }), (orgCaps, flowCap, attempts) => {
      // One history per contact, shared by the flows, as a run reads it; flow `tx` is transactional, `a` has the flow cap.
      const history = new Map<string, PastSend[]>();
      const counters = {
        a: new SendCounts({ org: orgCaps, flow: flowCap, flowId: 'a', transactional: false }, history),
        b: new SendCounts({ org: orgCaps, flowId: 'b', transactional: false }, history),
        tx: new SendCounts({ org: orgCaps, flowId: 'tx', transactional: true }, history),
      };
      let now = 1_000_000;
      for (const a of attempts) {
        now += a.gapSeconds * 1000;
        const counts = counters[a.flow];
        const sent = history.get('c') ?? [];
        const inWindow = (seconds: number, counted: (s: PastSend) => boolean) => sent.filter((s) => now - s.at < seconds * 1000 && counted(s)).length;
        const full =
          (a.flow === 'a' && flowCap !== undefined && inWindow(flowCap.withinSeconds, (s) => s.flowId === 'a') >= flowCap.maxSends) ||
          (a.flow !== 'tx' &&
            orgCaps.some((c) => (c.channel === undefined || c.channel === a.channel) && inWindow(c.withinSeconds, (s) => !s.transactional && (c.channel === undefined || s.channel === c.channel)) >= c.maxSends));
        const reason = counts.capped('c', a.channel, now);
        if ((reason !== null) !== full) return false;
        if (reason === null) counts.add('c', a.channel, now);
      }
      // Safety, checked on the result alone: in every window ending at a send, no cap is exceeded.
      const sent = history.get('c') ?? [];
      for (const end of sent) {
        const window = (seconds: number) => sent.filter((s) => s.at <= end.at && end.at - s.at < seconds * 1000);
        if (flowCap && window(flowCap.withinSeconds).filter((s) => s.flowId === 'a').length > flowCap.maxSends) return false;
        for (const c of orgCaps) {
          const counted = window(c.withinSeconds).filter((s) => !s.transactional && (c.channel === undefined || s.channel === c.channel));
          if (counted.length > c.maxSends) return false;
        }
      }
      return true;
    }),
    { numRuns: 500 },
  );
  t.pass('500 random histories');
});

t.test('the lookback is the longest window that applies', async (t) => {
  const caps = [{ maxSends: 1, withinSeconds: 3600 }, { channel: 'email' as const, maxSends: 3, withinSeconds: 86_400 }];
  t.equal(lookbackMs({ org: caps, flow: { maxSends: 1, withinSeconds: 60 }, transactional: false }), 86_400_000);
  t.equal(lookbackMs({ org: caps, flow: { maxSends: 1, withinSeconds: 60 }, transactional: true }), 60_000, 'a transactional flow reads its own cap only');
  t.equal(lookbackMs({ org: [], transactional: false }), 0);
});
