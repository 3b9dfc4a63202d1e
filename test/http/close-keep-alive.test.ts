/**
 * A shutdown waits for no connection that has nothing left to answer: not a keep-alive connection whose
 * request was in flight when it began (closed once its response is out, not after the keep-alive timeout,
 * here 10 minutes), not one that never sent a byte (a browser's preconnect: Node stops its header timeout
 * at close and counts it neither idle nor expired), and not one that sent half a request and stopped (closed
 * once the request timeout has passed). Without the fix each close here waits forever: `closedWithin`
 * fails it at its deadline.
 */
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { scaled, waitFor } from '../helpers/deadline.js';

/** Resolves `closing` or rejects once `ms` (scaled) have passed, saying what held it. */
async function closedWithin(closing: Promise<unknown>, ms: number, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`the close still waits after ${scaled(ms)} ms: ${what}`)), scaled(ms))));
  try {
    await Promise.race([closing, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The socket's close (events.once would reject on the reset that may come first). */
const closeOf = (socket: Socket) => new Promise<void>((resolve) => socket.once('close', () => resolve()));

async function connected(url: URL): Promise<Socket> {
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  // The server may reset a connection it closes; the test looks at 'close', not at how it came.
  socket.on('error', () => {});
  return socket;
}

t.test('a response finished during close does not keep its connection, nor the close, waiting', { timeout: scaled(60_000) }, async (t) => {
  const h = await startTestApp(t, { config: { httpKeepAliveTimeoutMs: 600_000 } });
  await h.createOrg('acme');
  const url = new URL(await h.app.listen({ port: 0, host: '127.0.0.1' }));
  const socket = await connected(url);
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString()));
  const closedByServer = once(socket, 'close');
  // The headers now, the body once the close has begun: the request is in flight across it.
  const body = JSON.stringify({ batch: [] });
  socket.write(`POST /http/v1/batch HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: keep-alive\r\n\r\n`);
  await new Promise((resolve) => setTimeout(resolve, 100));
  const closing = h.app.close();
  await new Promise((resolve) => setTimeout(resolve, 100));
  socket.write(body);
  await closing;
  await closedByServer;
  t.match(received, /^HTTP\/1\.1 \d{3} /, 'the request in flight was answered');
  t.notMatch(received, /^HTTP\/1\.1 5\d\d/, 'not refused as closing');
});

t.test('a connection that never sent a byte does not hold the close', { timeout: scaled(60_000) }, async (t) => {
  const h = await startTestApp(t, { config: { httpKeepAliveTimeoutMs: 600_000 } });
  const url = new URL(await h.app.listen({ port: 0, host: '127.0.0.1' }));
  const silent = await Promise.all([connected(url), connected(url), connected(url)]);
  const closedByServer = Promise.all(silent.map(closeOf));
  await closedWithin(h.app.close(), 10_000, 'three connections that never sent a byte');
  await closedByServer;
  t.ok(silent.every((socket) => socket.destroyed), 'each silent connection was closed by the server');
});

t.test('half a request holds the close no longer than the request timeout', { timeout: scaled(60_000) }, async (t) => {
  const requestTimeoutMs = 1_500;
  const h = await startTestApp(t, { config: { httpKeepAliveTimeoutMs: 600_000, httpHeadersTimeoutMs: 1_000, httpRequestTimeoutMs: requestTimeoutMs } });
  const url = new URL(await h.app.listen({ port: 0, host: '127.0.0.1' }));
  let accepted: Socket | undefined;
  h.app.server.once('connection', (socket: Socket) => (accepted = socket));
  const half = await connected(url);
  half.write(`POST /http/v1/batch HTTP/1.1\r\nHost: ${url.host}\r\nContent-Type: application/json\r\n`);
  const closedByServer = closeOf(half);
  // The close begins once the server has read the bytes (else it sees a connection that sent none).
  await waitFor(() => (accepted?.bytesRead ?? 0) > 0, { what: 'the server read the half request' });
  const started = performance.now();
  await closedWithin(h.app.close(), 10_000, 'a connection that sent half its headers');
  await closedByServer;
  t.ok(performance.now() - started >= requestTimeoutMs - 50, 'not cut before the request timeout: a slow but live request may still finish');
});
