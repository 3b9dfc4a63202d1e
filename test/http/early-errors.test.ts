/**
 * Errors Node produces before any route runs, on a socket to the real service (a child process):
 * 414, 431, 400 for malformed request lines and headers, 408, and CONNECT, each problem+json with a
 * Request-Id and the connection closed; then random methods, paths and query strings over HTTP; and
 * not one error-level log line for any of it.
 */
import { METHODS, request } from 'node:http';
import { connect } from 'node:net';
import fc from 'fast-check';
import t, { type Test } from 'tap';
import { spawnServer } from '../helpers/server-process.js';

interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** The whole answer, then the connection was closed by the server. */
  closed: boolean;
}

/** Writes `data` as is and reads until the server closes the connection (or 10 s pass). */
function raw(port: number, data: string | Buffer, options: { keepOpen?: boolean } = {}): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(data);
      if (!options.keepOpen) socket.end();
    });
    const chunks: Buffer[] = [];
    let closed = false;
    const timer = setTimeout(() => socket.destroy(), 10_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('end', () => (closed = true));
    socket.on('error', () => {});
    socket.on('close', () => {
      clearTimeout(timer);
      const text = Buffer.concat(chunks).toString('latin1');
      const [head = '', ...rest] = text.split('\r\n\r\n');
      const [statusLine = '', ...lines] = head.split('\r\n');
      const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]);
      if (!status) return reject(new Error(`no HTTP answer: ${JSON.stringify(text.slice(0, 200))}`));
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
      resolve({ status, headers, body: rest.join('\r\n\r\n'), closed });
    });
  });
}

function problem(t: Test, answer: RawAnswer, status: number, code: string, label: string): void {
  t.equal(answer.status, status, `${label}: ${status}`);
  t.match(answer.headers['content-type'], /^application\/problem\+json/, `${label}: problem+json`);
  const body = JSON.parse(answer.body) as { code: string; requestId: string; detail: string };
  t.equal(body.code, code, `${label}: ${code}`);
  t.match(answer.headers['request-id'], /\S/, `${label}: a Request-Id`);
  t.equal(body.requestId, answer.headers['request-id'], `${label}: the same id in the body`);
  t.ok(answer.closed, `${label}: the connection is closed`);
}

t.test('early errors of a real process: problem+json with a Request-Id, never 500, never an error log line', async (t) => {
  const server = await spawnServer(t, { DATA_DIR: t.testdir(), HTTP_HEADERS_TIMEOUT_MS: '500', HTTP_REQUEST_TIMEOUT_MS: '1000' });
  const { port } = server;

  // Node counts the request line and the headers against one 16 KB limit (maxHeaderSize).
  problem(t, await raw(port, `GET /${'a'.repeat(70_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 414, 'uri_too_long', 'a 70 KB URL');
  // The rest of such a request is still arriving when the answer is sent, and the connection closes
  // only after it (a lingering close; on loopback an immediate close loses nothing either).
  for (let i = 0; i < 5; i++) problem(t, await raw(port, `GET /${'a'.repeat(300_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, { keepOpen: true }), 414, 'uri_too_long', `a 300 KB URL, still being sent (${i + 1})`);
  problem(t, await raw(port, `GET /admin/v1/orgs?q=${'a'.repeat(17_000)} HTTP/1.1\r\nHost: x\r\n\r\n`), 414, 'uri_too_long', 'a 17 KB query string in one packet with its headers');
  problem(t, await raw(port, `GET / HTTP/1.1\r\nHost: x\r\nCookie: ${'a'.repeat(20_000)}\r\n\r\n`), 431, 'headers_too_large', 'a 20 KB header');

  const malformed: Record<string, string | Buffer> = {
    'an unknown method': 'BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n',
    'a header without a colon': 'GET / HTTP/1.1\r\nHost x\r\n\r\n',
    'a NUL in a header value': 'GET / HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n',
    'a space in the URL': 'GET /a b HTTP/1.1\r\nHost: x\r\n\r\n',
    'HTTP/9.9': 'GET / HTTP/9.9\r\nHost: x\r\n\r\n',
    'both Content-Length and chunked': 'POST /http/v1/collect HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
    'a broken chunk size': 'POST /http/v1/collect HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\nzz\r\n',
    'binary noise': Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03]),
  };
  for (const [label, data] of Object.entries(malformed)) {
    const answer = await raw(port, data);
    problem(t, answer, 400, 'invalid_request', label);
    t.notMatch(answer.body, /pot|a\u0000b/, `${label}: the request is not echoed`);
  }

  const slow = await raw(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\n', { keepOpen: true });
  problem(t, slow, 408, 'request_timeout', 'headers never finished (HTTP_HEADERS_TIMEOUT_MS 500)');

  const connectKnown = await raw(port, 'CONNECT /admin/v1/orgs HTTP/1.1\r\nHost: x\r\n\r\n', { keepOpen: true });
  problem(t, connectKnown, 405, 'method_not_allowed', 'CONNECT to a known path');
  t.equal(connectKnown.headers.allow, 'GET, HEAD, POST');
  const connectProxy = await raw(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nRequest-Id: trace-7\r\n\r\n', { keepOpen: true });
  problem(t, connectProxy, 404, 'not_found', 'CONNECT as a proxy');
  t.equal(connectProxy.headers['request-id'], 'trace-7', 'with the incoming Request-Id, as any request');

  const queryMethod = await raw(port, 'QUERY /admin/v1/orgs HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
  t.equal(queryMethod.status, 405, 'QUERY without Content-Type: 405, not the 500 of the finding');
  t.match(queryMethod.headers['content-type'], /^application\/problem\+json/);

  const keptAlive = await new Promise<string>((resolve) => {
    let text = '';
    const socket = connect(port, '127.0.0.1', () => socket.write('GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n'));
    socket.on('data', (chunk) => {
      text += chunk.toString('latin1');
      // The first answer is complete: the next request on the same connection is malformed.
      if (text.endsWith('}') && !text.includes('HTTP/1.1 400')) socket.end('GET / HTTP/1.1\r\nHost x\r\n\r\n');
    });
    socket.on('close', () => resolve(text));
  });
  t.match(keptAlive, /^HTTP\/1\.1 200 .*"status":"ok".*HTTP\/1\.1 400 Bad Request.*"code":"invalid_request"/s, 'on a kept-alive connection, a malformed second request is answered after the first');

  // Methods Node's client sends (CONNECT has its own test above), on random paths and query strings.
  const segment = fc.oneof(fc.webSegment(), fc.constantFrom('__proto__', '%00', '..', '%zz', 'x'.repeat(120), 'admin', 'v1', 'orgs', 'acme'));
  const path = fc.array(segment, { maxLength: 5 }).map((s) => `/${s.join('/')}`);
  const query = fc.oneof(fc.constant(''), fc.webQueryParameters().map((q) => `?${q}`));
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...METHODS.filter((m) => m !== 'CONNECT')), path, query, async (method, p, q) => {
      const res = await new Promise<{ status: number; type: string; id: string | undefined }>((resolve, reject) => {
        const req = request({ port, host: '127.0.0.1', method, path: p + q, agent: false }, (r) => {
          r.resume();
          r.on('end', () => resolve({ status: r.statusCode!, type: String(r.headers['content-type']), id: r.headers['request-id'] as string | undefined }));
        });
        req.on('error', reject);
        req.end();
      });
      if (res.status === 500 || (res.status >= 400 && !res.type.startsWith('application/problem+json')) || !res.id) {
        throw new Error(`${method} ${p}${q}: ${res.status} ${res.type} ${res.id}`);
      }
    }),
    { numRuns: 300 },
  );

  t.equal((await fetch(`${server.url}/healthz`)).status, 200, 'the service is still up');
  t.notMatch(server.stderr(), /"level":50/, 'no error-level log line');
  await server.stop();
});
