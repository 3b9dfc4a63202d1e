/** The per-request logger stand-in: no pino child until a line is logged at an enabled level; the lines are the child's. */
import t from 'tap';
import { pino } from 'pino';
import type { FastifyBaseLogger } from 'fastify';
import { lazyChildLogger } from '../../src/http/lazy-child-logger.js';

function parent(level: string) {
  const lines: Array<Record<string, unknown>> = [];
  const logger = pino({ level }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  let children = 0;
  const child = logger.child;
  logger.child = function (this: typeof logger, bindings, options) {
    children++;
    return child.call(this, bindings, options);
  } as typeof logger.child;
  return { logger: logger as unknown as FastifyBaseLogger, lines, children: () => children };
}

t.test('no child is made for a request that logs nothing, or only below the level', async (t) => {
  const p = parent('info');
  const log = lazyChildLogger(p.logger, { reqId: 'r1' }, {});
  t.equal(log.level, 'info', "the level is the parent's");
  log.debug('not shown');
  log.trace({ detail: 1 }, 'not shown');
  t.equal(p.children(), 0);
  t.same(p.lines, []);
});

t.test('the first line makes the child once; lines carry its bindings', async (t) => {
  const p = parent('info');
  const log = lazyChildLogger(p.logger, { reqId: 'r2' }, {});
  log.info({ code: 'x' }, 'first');
  log.error(new Error('boom'), 'second');
  log.warn('third');
  t.equal(p.children(), 1);
  t.match(p.lines, [
    { reqId: 'r2', code: 'x', msg: 'first', level: 30 },
    { reqId: 'r2', msg: 'second', level: 50, err: { message: 'boom' } },
    { reqId: 'r2', msg: 'third', level: 40 },
  ]);
  log.child({ step: 'inner' }).info('nested');
  t.match(p.lines.at(-1), { reqId: 'r2', step: 'inner', msg: 'nested' });
});

t.test("a route's own level is the child's: lines below the parent's level pass when the route asks", async (t) => {
  const p = parent('info');
  const log = lazyChildLogger(p.logger, { reqId: 'r3' }, { level: 'debug' });
  t.equal(log.level, 'debug');
  log.debug('shown');
  t.match(p.lines, [{ reqId: 'r3', msg: 'shown', level: 20 }]);
  const silent = lazyChildLogger(parent('silent').logger, { reqId: 'r4' }, {});
  silent.fatal('nothing at silent');
  t.equal(silent.level, 'silent');
});
