/**
 * A process started with EXIT_WITH_PARENT ends once the process that started it is gone, as a service
 * started by a test file that tap killed at its timeout must (exit-with-parent.mjs). Without the guard
 * the grandchild here lives on and the wait fails at its deadline.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import t from 'tap';
import { waitFor } from './deadline.js';
import { EXIT_WITH_PARENT } from './entry.js';

/** Running, not ended (a zombie not reaped yet has ended). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

t.test('the child of a killed process ends on its own', async (t) => {
  const grandchild = `require('node:child_process').spawn(process.execPath, ${JSON.stringify([...EXIT_WITH_PARENT, '-e', 'setInterval(() => {}, 1000)'])}, { stdio: 'ignore' }).on('spawn', function () { console.log(this.pid); });`;
  const middle = spawn(process.execPath, ['-e', `${grandchild} setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => middle.kill('SIGKILL'));
  let out = '';
  middle.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
  const pid = await waitFor(() => /^\d+\n/.test(out) && Number(out.trim()), { what: 'the grandchild started', timeoutMs: 10_000 });
  t.teardown(() => running(pid) && process.kill(pid, 'SIGKILL'));
  await new Promise((resolve) => setTimeout(resolve, 600));
  t.ok(running(pid), 'the grandchild runs while its parent does');
  middle.kill('SIGKILL');
  await waitFor(() => !running(pid), { what: 'the grandchild ended after its parent was killed', timeoutMs: 5_000 });
  t.notOk(running(pid), 'ended');
});
