/**
 * Slow clients over real HTTP (issue 12, item 13): with no request timeout, 3,000 connections sending a
 * body a byte at a time stayed open. The service runs as its own process with short configured
 * timeouts; each slow connection must be closed by the server while its client is still sending, a
 * normal request must still be answered meanwhile, and the aborted bodies are not logged as errors.
 */
import { connect } from 'node:net';
import t from 'tap';
import { customEvent } from '../../helpers/app.js';
import { createOrgOverHttp, spawnServer } from '../../helpers/server-process.js';

const SLOW_CONNECTIONS = 30;
/** Bytes a slow client dribbles, one per tick: it would finish long after every configured timeout. */
const DRIBBLE_BYTES = 150;
const TICK_MS = 100;

interface Outcome {
  /** Whether the client still had bytes to send when the connection closed (then the server closed it). */
  unfinished: boolean;
  /** What the server wrote back, if anything. */
  answer: string;
}

/**
 * Opens a connection, writes `head`, then one byte of `dribbleText` per tick. Should the server let it
 * send everything, the client waits one more tick and closes the connection itself.
 */
function dribble(port: number, head: string, dribbleText: string): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let sent = 0;
    let answer = '';
    let timer: NodeJS.Timeout | undefined;
    socket.on('connect', () => {
      socket.write(head);
      timer = setInterval(() => {
        if (sent === dribbleText.length) {
          // The whole text went out without the server closing: the client stops here (test fails).
          clearInterval(timer);
          setTimeout(() => socket.destroy(), TICK_MS);
          return;
        }
        socket.write(dribbleText[sent++]!);
      }, TICK_MS);
    });
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearInterval(timer);
      resolve({ unfinished: sent < dribbleText.length, answer });
    });
  });
}

t.test('slow bodies, slow headers and idle keep-alive connections are closed by the server; others are served', async (t) => {
  const server = await spawnServer(t, {
    DATA_DIR: t.testdir(),
    LOG_LEVEL: 'info',
    HTTP_HEADERS_TIMEOUT_MS: '500',
    HTTP_REQUEST_TIMEOUT_MS: '1000',
    HTTP_KEEP_ALIVE_TIMEOUT_MS: '500',
  });
  const cred = await createOrgOverHttp(server.url, 'acme');
  const body = JSON.stringify(customEvent(cred, { messageId: 'normal' }));

  const slowHead = `POST /http/v1/collect HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${DRIBBLE_BYTES + 1}\r\n\r\n{`;
  const slowBodies = Array.from({ length: SLOW_CONNECTIONS }, () => dribble(server.port, slowHead, ' '.repeat(DRIBBLE_BYTES)));
  const slowHeaders = dribble(server.port, 'POST /http/v1/collect HTTP/1.1\r\nHost: x\r\n', `X-Slow: ${'a'.repeat(DRIBBLE_BYTES)}`);
  // A complete request, then silence on the kept-alive connection; the client itself would close it
  // only after as long as a slow body takes to dribble.
  const idleKeepAlive = new Promise<{ closedByServer: boolean; answer: string }>((resolve) => {
    const socket = connect(server.port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
    let answer = '';
    let closedByServer = false;
    const giveUp = setTimeout(() => socket.destroy(), DRIBBLE_BYTES * TICK_MS);
    socket.on('data', (chunk) => (answer += chunk.toString()));
    socket.on('end', () => (closedByServer = true)); // the server's FIN
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(giveUp);
      resolve({ closedByServer, answer });
    });
  });

  // While the slow connections are open, a normal client is served.
  const normal = await fetch(`${server.url}/http/v1/collect`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  t.equal(normal.status, 200, 'a normal event is acknowledged while slow clients hold connections');
  t.same(await normal.json(), { messageId: 'normal' });

  const outcomes = await Promise.all(slowBodies);
  const unfinished = outcomes.filter((o) => o.unfinished);
  t.equal(unfinished.length, SLOW_CONNECTIONS, 'every slow-body connection was closed before its client finished the body');
  t.ok(outcomes.every((o) => o.answer.startsWith('HTTP/1.1 408')), 'each was answered 408 Request Timeout');

  const headers = await slowHeaders;
  t.ok(headers.unfinished, 'the slow-header connection was closed before its headers were complete');
  t.match(headers.answer, /^HTTP\/1\.1 408/, 'answered 408');

  const keptAlive = await idleKeepAlive;
  t.match(keptAlive.answer, /^HTTP\/1\.1 200/, 'the keep-alive request was answered');
  t.ok(keptAlive.closedByServer, 'the idle keep-alive connection was closed by the server');

  const after = await fetch(`${server.url}/healthz`);
  t.equal(after.status, 200, 'the service is healthy afterwards');
  const log = server.stderr();
  t.notMatch(log, /"level":50/, 'no error-level log line for the aborted bodies');
  t.notMatch(log, /request failed/, 'no "request failed"');
  await server.stop();
});
