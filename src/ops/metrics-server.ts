/**
 * /metrics on its own port (METRICS_PORT), so the public port need not expose it and a firewall or a
 * Kubernetes NetworkPolicy can keep it for Prometheus alone. Answers GET /metrics and nothing else.
 */
import { type Server, createServer } from 'node:http';
import { once } from 'node:events';
import type { Registry } from 'prom-client';

export async function listenMetrics(registry: Registry, port: number, host: string): Promise<Server> {
  const server = createServer((request, response) => {
    const path = (request.url ?? '').split('?')[0];
    if (request.method !== 'GET' || path !== '/metrics') {
      response.writeHead(404, { 'content-type': 'text/plain' }).end('only GET /metrics is served on this port\n');
      return;
    }
    registry.metrics().then(
      (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => response.writeHead(503, { 'content-type': 'text/plain' }).end('metrics unavailable\n'),
    );
  });
  server.listen(port, host);
  await once(server, 'listening');
  return server;
}
