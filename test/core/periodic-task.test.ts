/** PeriodicTask.kick: the work now, once more after a run in progress (however many kicks), nothing before start or after stop. */
import t from 'tap';
import { PeriodicTask } from '../../src/core/periodic-task.js';

t.test('kick runs the work now and coalesces kicks during a run into one more run', async (t) => {
  let runs = 0;
  let release: () => void = () => {};
  const task = new PeriodicTask(
    () => {
      runs++;
      return new Promise<void>((resolve) => (release = resolve));
    },
    (error) => t.fail(String(error)),
  );
  task.kick();
  t.equal(runs, 0, 'not before start');
  task.start(3_600_000);
  task.kick();
  t.equal(runs, 1, 'a kick runs it at once, without waiting for the interval');
  task.kick();
  task.kick();
  task.kick();
  t.equal(runs, 1, 'never two runs at once');
  release();
  await new Promise((r) => setImmediate(r));
  t.equal(runs, 2, 'the kicks during the run make one more run, right after it');
  release();
  await new Promise((r) => setImmediate(r));
  t.equal(runs, 2, 'and only one');
  task.kick();
  t.equal(runs, 3);
  const stopped = task.stop();
  release();
  await stopped;
  task.kick();
  t.equal(runs, 3, 'nothing after stop');
});
