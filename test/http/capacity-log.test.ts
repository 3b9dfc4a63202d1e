/**
 * Issue 37, finding 4: a documented retry-later answer (503 sandbox_busy, sandbox_paused,
 * storage_unavailable…) was logged at error level with a stack, once per request, so an operator alerting
 * on errors was paged for each. It is a warning now, without a stack, once per change: when an org starts
 * getting that code, again only after a minute without it. A 500 is still an error with its stack.
 * The real error handler, its pino lines read from the stream, a manual clock.
 */
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import pino from 'pino';
import t from 'tap';
import { ManualClock } from '../../src/core/context.js';
import { AppError } from '../../src/core/errors.js';
import { SandboxBusy, SandboxPaused } from '../../src/db/untrusted.js';
import { OrgUnavailable, StorageUnavailable } from '../../src/core/unavailable.js';
import { capacityErrorsAtWarn } from '../../src/http/capacity-log.js';
import { registerProblemHandlers } from '../../src/http/problem.js';

type Line = Record<string, unknown> & { level: number; msg: string };

async function appWithLog(clock: ManualClock) {
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  const app = Fastify({ logger: { level: 'info', stream } });
  registerProblemHandlers(app, clock);
  app.get<{ Params: { slug: string; what: string } }>('/orgs/:slug/:what', async (request) => {
    switch (request.params.what) {
      case 'busy':
        throw new SandboxBusy();
      case 'paused':
        throw new SandboxPaused(request.params.slug, 30);
      case 'restarting':
        throw new StorageUnavailable('it was ended by SIGKILL');
      case 'bug':
        throw new TypeError('a bug');
      default:
        throw new AppError('not_found');
    }
  });
  await app.ready();
  return { app, lines, ask: (path: string) => app.inject({ url: path }) };
}

const capacityLines = (lines: Line[]) => lines.filter((l) => l.msg.startsWith('answering 503'));

t.test('a capacity 503 is a warning without a stack, once per org and code until a minute passes without it', async (t) => {
  const clock = new ManualClock();
  const { app, lines, ask } = await appWithLog(clock);
  t.teardown(() => app.close());
  for (let i = 0; i < 5; i++) {
    const res = await ask('/orgs/acme/busy');
    t.equal(res.statusCode, 503);
    t.equal(res.headers['retry-after'], '1');
    clock.advance(10_000);
  }
  t.equal(capacityLines(lines).length, 1, 'five answers, one line');
  const [first] = capacityLines(lines);
  t.match(first, { level: 40, code: 'sandbox_busy', org: 'acme', detail: /nothing ran/ });
  t.notOk('err' in first!, 'no error object');
  t.notMatch(JSON.stringify(first), /\bat \S+ \(|stack/, 'no stack');
  t.equal(lines.filter((l) => l.level >= 50).length, 0, 'nothing at error level');

  await ask('/orgs/other/busy');
  await ask('/orgs/acme/paused');
  await ask('/orgs/acme/paused');
  await ask('/orgs/acme/restarting');
  t.same(
    capacityLines(lines).map((l) => [l.code, l.org]),
    [
      ['sandbox_busy', 'acme'],
      ['sandbox_busy', 'other'],
      ['sandbox_paused', 'acme'],
      ['storage_unavailable', 'acme'],
    ],
    'another org, or another code, is a change',
  );

  clock.advance(61_000);
  await ask('/orgs/acme/busy');
  const again = capacityLines(lines).at(-1)!;
  t.match(again, { code: 'sandbox_busy', org: 'acme', previousStretch: 5 }, 'a minute without it: logged again, with the count of the stretch before');

  const bug = await ask('/orgs/acme/bug');
  t.equal(bug.statusCode, 500);
  const error = lines.find((l) => l.level === 50);
  t.match(error, { msg: 'request failed', err: { type: 'TypeError', stack: /a bug/ } }, 'a 500 is still an error, with its stack');
  t.equal((await ask('/orgs/acme/nothing')).statusCode, 404);
  t.equal(lines.filter((l) => l.level >= 40).length, capacityLines(lines).length + 1, 'a 4xx is not logged as either');
});

t.test('background work: a 503 condition each tick is one warning per stretch; other errors stay errors', async (t) => {
  const clock = new ManualClock();
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  const logger = capacityErrorsAtWarn(pino({ level: 'info' }, stream), clock);
  const damaged = new OrgUnavailable('victim', 'Corrupt database file');
  // A flow runner ticking ten times a second for a minute over a damaged org, beside another org's bug.
  for (let tick = 0; tick < 600; tick++) {
    logger.error({ err: damaged, org: 'victim', flow: 'welcome' }, 'flow run failed');
    clock.advance(100);
  }
  logger.error({ err: new StorageUnavailable('it was ended by SIGKILL'), org: 'victim' }, 'flow run failed');
  logger.error({ err: new TypeError('a bug'), org: 'bystander' }, 'flow run failed');
  logger.info({ org: 'bystander' }, 'something else');
  await new Promise((resolve) => setImmediate(resolve));

  const warnings = lines.filter((l) => l.level === 40);
  t.same(
    warnings.map((l) => [l.msg, l.code, l.org, l.work]),
    [
      ['background work waits on a 503 condition (logged once until a minute passes without it)', 'org_unavailable', 'victim', 'flow run failed'],
      ['background work waits on a 503 condition (logged once until a minute passes without it)', 'storage_unavailable', 'victim', 'flow run failed'],
    ],
    'six hundred ticks of one condition: one warning; another code: one more',
  );
  t.notMatch(JSON.stringify(warnings), /\bat \S+ \(|stack/, 'no stack');
  const errors = lines.filter((l) => l.level === 50);
  t.equal(errors.length, 1, 'a failure that is not a 503 condition is still an error');
  t.match(errors[0], { msg: 'flow run failed', org: 'bystander', err: { type: 'TypeError', stack: /a bug/ } });
  t.ok(lines.some((l) => l.msg === 'something else'), 'the other levels pass through');

  clock.advance(61_000);
  logger.error({ err: damaged, org: 'victim' }, 'flow run failed');
  await new Promise((resolve) => setImmediate(resolve));
  t.match(lines.at(-1), { level: 40, code: 'org_unavailable', previousStretch: 600 }, 'a minute later: logged again with the count of the stretch');
});
