/**
 * Timeouts of the HTTP server, so a client cannot hold a connection by sending its request slowly
 * (slowloris: a byte now and then). Node's own defaults (a 300 s request timeout, which Fastify even
 * turns off) let 3,000 slow-body connections stay open indefinitely.
 */
import type { ServerOptions } from 'node:http';
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
 * Node's `server.close()` closes the connections idle at that moment. One whose response was still on
 * its way then stays open after it until the keep-alive timeout (72 s), and the close waits for it: a
 * browser left on the console held a shutdown for 74 s. While the server closes, connections that have
 * gone idle since are closed every CLOSING_IDLE_CHECK_MS (nothing runs per request).
 */
export function closeIdleWhileClosing(app: FastifyInstance): void {
  let timer: NodeJS.Timeout | undefined;
  app.addHook('preClose', (done) => {
    timer = setInterval(() => app.server.closeIdleConnections(), CLOSING_IDLE_CHECK_MS).unref();
    done();
  });
  app.addHook('onClose', (_instance, done) => {
    clearInterval(timer);
    done();
  });
}
