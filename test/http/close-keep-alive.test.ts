/**
 * A shutdown does not wait for a keep-alive connection whose request was in flight when it began: that
 * connection is closed once its response is out, not after the keep-alive timeout (here 10 minutes, so
 * without the fix this test runs into its own timeout and fails).
 */
import { connect } from 'node:net';
import { once } from 'node:events';
import t from 'tap';
import { startTestApp } from '../helpers/app.js';
import { scaled } from '../helpers/deadline.js';

t.test('a response finished during close does not keep its connection, nor the close, waiting', { timeout: scaled(60_000) }, async (t) => {
  const h = await startTestApp(t, { config: { httpKeepAliveTimeoutMs: 600_000 } });
  await h.createOrg('acme');
  const url = new URL(await h.app.listen({ port: 0, host: '127.0.0.1' }));
  const socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
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
