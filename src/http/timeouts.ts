/**
 * Timeouts of the HTTP server, so a client cannot hold a connection by sending its request slowly
 * (slowloris: a byte now and then). Node's own defaults (a 300 s request timeout, which Fastify even
 * turns off) let 3,000 slow-body connections stay open indefinitely.
 */
import type { ServerOptions } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Config } from '../core/config.js';

/** Node checks the header and request timeouts on this interval (its default is 30 s, so a 10 s
 *  timeout could take 40 s to act); a pass over the open connections costs microseconds. */
const MAX_CHECK_INTERVAL_MS = 1_000;

export function httpTimeouts(config: Config): { requestTimeout: number; keepAliveTimeout: number; http: ServerOptions } {
  return {
    requestTimeout: config.httpRequestTimeoutMs,
    keepAliveTimeout: config.httpKeepAliveTimeoutMs,
    http: {
      headersTimeout: config.httpHeadersTimeoutMs,
      requestTimeout: config.httpRequestTimeoutMs,
      connectionsCheckingInterval: Math.min(MAX_CHECK_INTERVAL_MS, config.httpHeadersTimeoutMs),
    },
  };
}

/** How often idle connections are closed while the server closes. */
const CLOSING_IDLE_CHECK_MS = 100;

/**
 * Node's `server.close()` closes the connections idle at that moment and stops its header and request
 * timeouts. Three kinds of connection then held a close: one whose response was still on its way (it
 * stays open until the keep-alive timeout, 72 s: a browser left on the console held a shutdown for 74 s);
 * one that never sent a byte (a browser's speculative preconnect: Node counts it neither idle nor expired,
 * so it held a test app's close until the file's timeout, 275 s); one that sent part of a request and
 * stopped. While the server closes, every CLOSING_IDLE_CHECK_MS the idle connections and those that never
 * sent a byte are closed; once `requestTimeoutMs` has passed (the longest Node would have let a request
 * run) every connection is. Connections are tracked as they open, nothing runs per request.
 */
export function closeIdleWhileClosing(app: FastifyInstance, requestTimeoutMs: number): void {
  const open = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  let timer: NodeJS.Timeout | undefined;
  app.addHook('preClose', (done) => {
    const deadline = performance.now() + requestTimeoutMs;
    timer = setInterval(() => {
      if (performance.now() >= deadline) {
        app.server.closeAllConnections();
        return;
      }
      app.server.closeIdleConnections();
      for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
    }, CLOSING_IDLE_CHECK_MS).unref();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearInterval(timer);
    done();
  });
}
