/**
 * The collect steps composed without a route, as a second ingestion endpoint would compose them, on a real
 * embedded log: each outcome is a value, and what reaches the log is what the routes would write.
 */
import t, { type Test } from 'tap';
import { ManualClock } from '../../../src/core/context.js';
import { sha256Hex } from '../../../src/core/secrets.js';
import { PartnerRegistry } from '../../../src/control/partner-registry.js';
import { createAuthenticateStep } from '../../../src/events/collect/authenticate-step.js';
import { createCommitStep } from '../../../src/events/collect/commit-step.js';
import { createQuarantineStep } from '../../../src/events/collect/quarantine-step.js';
import { createValidateBatchStep } from '../../../src/events/collect/validate-batch-step.js';
import { createValidateEventStep } from '../../../src/events/collect/validate-event-step.js';
import { EmbeddedLog } from '../../../src/events/log/embedded-log.js';
import { GroupCommitter } from '../../../src/events/log/group-commit.js';
import { decodeRecord } from '../../../src/events/log/record-codec.js';
import type { LogEntry } from '../../../src/events/log/types.js';
import { createMetrics } from '../../../src/ops/metrics.js';
import { customEvent } from '../../helpers/app.js';

const cred = { partnerId: 'p-1', partnerSecret: 's-1' };

async function setUp(t: Test) {
  const registry = new PartnerRegistry();
  registry.set(cred.partnerId, { org: 'acme', environment: 'staging', secretHash: sha256Hex(cred.partnerSecret) });
  const clock = new ManualClock(Date.UTC(2026, 5, 1));
  const backend = await EmbeddedLog.open(t.testdir());
  t.teardown(() => backend.close());
  const log = new GroupCommitter(backend);
  const metrics = createMetrics();
  const steps = {
    authenticate: createAuthenticateStep(registry, clock, 'with credentials'),
    validateEvent: createValidateEventStep(),
    validateBatch: createValidateBatchStep(100),
    commit: createCommitStep(log, metrics),
    keepInQuarantine: createQuarantineStep(log),
  };
  const stored = async (): Promise<LogEntry[]> => {
    const reader = await backend.openReader(0);
    const records = await reader.read(100, 0);
    await reader.close();
    return records.flatMap((r) => decodeRecord(r.payload));
  };
  return { steps, clock, backend, metrics, stored };
}

t.test('authenticate stops a body that is not an object and an unknown partner, and stamps the rest', async (t) => {
  const { steps, clock } = await setUp(t);
  const notObject = steps.authenticate([cred]);
  t.equal(notObject.kind, 'stop');
  t.match(notObject.kind === 'stop' && notObject.problem, { code: 'invalid_request', message: /JSON object with credentials; got an array/ });
  const wrong = steps.authenticate({ ...cred, partnerSecret: 'nope' });
  t.match(wrong.kind === 'stop' && wrong.problem, { code: 'invalid_credentials' });
  const body = customEvent(cred);
  const received = steps.authenticate(body);
  t.same(received, { kind: 'ok', value: { body, who: { org: 'acme', environment: 'staging' }, receivedAt: clock.now() } });
});

t.test('an accepted event goes to the log and is answered with its messageId once durable', async (t) => {
  const { steps, stored, metrics } = await setUp(t);
  const received = steps.authenticate(customEvent(cred, { messageId: 'm-1' }));
  if (received.kind !== 'ok') throw received.problem;
  const checked = steps.validateEvent(received.value);
  t.equal(checked.kind, 'ok');
  if (checked.kind !== 'ok') return;
  t.same(await steps.commit(checked.value), { kind: 'ok', value: { messageId: 'm-1' } });
  const entries = await stored();
  t.same(entries.map((e) => [e.kind, e.messageId, e.org, e.environment]), [['event', 'm-1', 'acme', 'staging']]);
  t.notMatch(entries[0]!.body, /partnerSecret/, 'the secret is not stored');
  t.equal((await metrics.eventsAccepted.get()).values[0]?.value, 1, 'counted as accepted');
});

t.test('a rejected event is a quarantine value: kept in the log, then answered with its problem', async (t) => {
  const { steps, stored } = await setUp(t);
  const received = steps.authenticate(customEvent(cred, { type: 'nonsense' }));
  if (received.kind !== 'ok') throw received.problem;
  const checked = steps.validateEvent(received.value);
  t.equal(checked.kind, 'quarantine');
  if (checked.kind !== 'quarantine') return;
  t.same(await stored(), [], 'nothing written before the quarantine step');
  const done = await steps.keepInQuarantine(checked);
  t.same(done, { kind: 'stop', problem: checked.problem }, 'the problem the validate step chose');
  t.equal(done.problem.code, 'schema_violation');
  t.same((await stored()).map((e) => [e.kind, e.code]), [['rejected', 'schema_violation']]);
});

t.test('a batch member over the member limit stops without quarantine', async (t) => {
  const { steps } = await setUp(t);
  const { partnerId: _id, partnerSecret: _secret, ...member } = customEvent(cred);
  const received = steps.authenticate({ ...cred, batch: [member] });
  if (received.kind !== 'ok') throw received.problem;
  const checked = steps.validateBatch(received.value);
  t.equal(checked.kind, 'stop');
  t.match(checked.kind === 'stop' && checked.problem, { code: 'payload_too_large', message: /at most 100 bytes/ });
});

t.test('a log that stored nothing stops with log_unavailable, for accepted and rejected entries alike', async (t) => {
  const { steps, backend } = await setUp(t);
  const received = steps.authenticate(customEvent(cred));
  if (received.kind !== 'ok') throw received.problem;
  const checked = steps.validateEvent(received.value);
  if (checked.kind !== 'ok') throw new Error('expected a valid event');
  const bad = steps.validateEvent({ ...received.value, body: { ...received.value.body, type: 'nonsense' } });
  if (bad.kind !== 'quarantine') throw new Error('expected a rejected event');
  await backend.close();
  const accepted = await steps.commit(checked.value);
  t.match(accepted.kind === 'stop' && accepted.problem, { code: 'log_unavailable', extra: { headers: { 'Retry-After': '1' } } });
  const rejected = await steps.keepInQuarantine(bad);
  t.match(rejected.problem, { code: 'log_unavailable' });
});
