/**
 * The soak's webhook receiver: a real HTTP server that records each delivery (its `webhook-id`, the time,
 * the contact) and answers 204, or 503 to a share of attempts so the service's retries run too.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Delivery {
  id: string;
  at: number;
  email: string;
  org: string;
}

export interface Receiver {
  url: string;
  /** Attempts answered 2xx: deliveries, a webhook-id more than once if the service sent it again. */
  deliveries: Delivery[];
  /** Attempts answered 503 (retried by the service). */
  refused: number;
  close(): Promise<void>;
}

export async function startReceiver(refuseShare: number, random: () => number): Promise<Receiver> {
  const deliveries: Delivery[] = [];
  let refused = 0;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (random() < refuseShare) {
        refused++;
        res.writeHead(503, { 'retry-after': '1' }).end();
        return;
      }
      const id = String(req.headers['webhook-id'] ?? '');
      let body: { email?: unknown; org?: unknown } = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as typeof body;
      } catch {
        // Recorded with empty fields: the check reports it.
      }
      deliveries.push({ id, at: Date.now(), email: String(body.email ?? ''), org: String(body.org ?? '') });
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 1000;
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    deliveries,
    get refused() {
      return refused;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
