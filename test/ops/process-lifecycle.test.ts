/**
 * The real process: /metrics on METRICS_PORT only, and an uncaught error closes the service cleanly
 * (DuckDB closed, DATA_DIR released, acknowledged events kept) before it exits 1.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, createOrgOverHttp, freePort, spawnServer, waitForCompaction } from '../helpers/server-process.js';
import { ROOT } from '../helpers/paths.js';
import { waitFor } from '../helpers/deadline.js';

const THROW_ON_SIGUSR2 = join(ROOT, 'test/fixtures/throw-on-sigusr2.mjs');

t.test('METRICS_PORT: /metrics there, and not on the public port', async (t) => {
  const metricsPort = await freePort();
  const server = await spawnServer(t, { DATA_DIR: t.testdir(), METRICS_PORT: String(metricsPort) });
  const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
  t.equal(metrics.status, 200);
  t.match(await metrics.text(), /^# HELP audience_events_accepted_total/m, 'the service metrics');
  const other = await fetch(`http://127.0.0.1:${metricsPort}/healthz`);
  t.equal(other.status, 404, 'nothing else on the metrics port');
  await other.arrayBuffer();
  const hidden = await fetch(`${server.url}/metrics`);
  t.equal(hidden.status, 404, 'the public port does not expose /metrics');
  await hidden.arrayBuffer();
  await server.stop();
});

t.test('an uncaught error: fatal log, a clean close, exit 1; the next start finds every acknowledged event', async (t) => {
  const dataDir = t.testdir();
  const server = await spawnServer(t, { DATA_DIR: dataDir, NODE_OPTIONS: `--import=${THROW_ON_SIGUSR2}`, LOG_LEVEL: 'info' });
  const cred = await createOrgOverHttp(server.url, 'acme');
  const sent = await fetch(`${server.url}/http/v1/collect`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ...cred, clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', messageId: 'before-crash', properties: { eventName: 'crash_probe', properties: {} }, traits: { email: 'a@example.com' } }),
  });
  t.equal(sent.status, 200, await sent.text());

  process.kill(server.pid, 'SIGUSR2');
  const { code } = await server.exited;
  t.equal(code, 1, 'exits 1');
  t.match(server.stderr(), /"level":60.*uncaught error; closing/, 'a fatal log line');
  t.match(server.stderr(), /injected uncaught error/, 'naming the error');

  const again = await spawnServer(t, { DATA_DIR: dataDir });
  await waitForCompaction(again.url, 'acme', cred);
  const samples = await fetch(`${again.url}/admin/v1/orgs/acme/events/samples?env=production&eventType=custom_crash_probe`, {
    headers: { authorization: `Bearer ${ADMIN_KEY}` },
  });
  t.match(await samples.text(), /before-crash/, 'the event acknowledged before the crash is there');
  await again.stop();
});

t.test('logs a person can read: ISO times, where the admin key is, and a last "stopped" line', async (t) => {
  const dataDir = t.testdir();
  const lines = (stderr: string) =>
    stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { time: unknown; msg: string; reason?: string; durationMs?: unknown; exitCode?: unknown });
  // No ADMIN_KEY: the first start generates the key file, the next one reads it.
  const env = { DATA_DIR: dataDir, ADMIN_KEY: '', LOG_LEVEL: 'info' };
  const first = await spawnServer(t, env);
  await first.stop();
  const second = await spawnServer(t, env);
  await second.stop();
  for (const [run, keyLine] of [[first, /^admin key generated and stored in .*admin\.key$/], [second, /^admin key read from .*admin\.key$/]] as const) {
    const logged = lines(run.stderr());
    t.ok(logged.length >= 3, `${logged.length} lines`);
    t.ok(logged.every((l) => typeof l.time === 'string' && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(l.time)), 'every time is ISO-8601 UTC');
    t.equal(logged.filter((l) => l.msg.startsWith('admin key')).map((l) => keyLine.test(l.msg)).join(), 'true', `one admin key line: ${keyLine}`);
    const last = logged.at(-1)!;
    t.match(last, { msg: 'stopped', reason: 'SIGTERM', exitCode: 0 }, 'the last line says it stopped, why, and its exit status');
    t.ok(typeof last.durationMs === 'number' && last.durationMs >= 0, 'and how long the close took');
  }
});

t.test("systemd's Type=notify: READY=1 reaches NOTIFY_SOCKET once the service listens", async (t) => {
  // A Unix datagram socket, as systemd listens on (Node has none: python3 stands in for systemd). A short
  // path: a socket's is at most 107 bytes, and t.testdir()'s is longer.
  const dir = mkdtempSync(join(tmpdir(), 'sd-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const socketPath = join(dir, 'notify');
  const listener = spawn('python3', ['-c', `import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); s.bind(${JSON.stringify(socketPath)}); print('bound', flush=True); print(s.recv(4096).decode(), flush=True)`], { stdio: ['ignore', 'pipe', 'inherit'] });
  t.teardown(() => void listener.kill());
  let heard = '';
  listener.stdout!.on('data', (chunk: Buffer) => (heard += chunk.toString()));
  await waitFor(() => heard.startsWith('bound'), 10_000);
  const server = await spawnServer(t, { DATA_DIR: t.testdir(), NOTIFY_SOCKET: socketPath });
  await waitFor(() => heard.includes('READY=1'), 10_000);
  t.match(heard, new RegExp(`READY=1\\nMAINPID=${server.pid}`), "READY=1, for the service's own pid");
  await server.stop();
});
