/** A real HTTP receiver on 127.0.0.1 (port 0) that records what it gets and answers from a script. */
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** Answers one request; return without ending the response to leave the sender hanging. */
export type Responder = (res: ServerResponse, n: number) => void;

export interface Receiver {
  url: string;
  port: number;
  received: Received[];
  close(): Promise<void>;
}

export const status =
  (code: number, headers: Record<string, string> = {}): Responder =>
  (res) => {
    res.writeHead(code, headers).end('ignored body');
  };

/** Answers the n-th request with script[n], repeating the last entry. */
export async function startReceiver(script: Responder[] = [status(204)], listenPort = 0): Promise<Receiver> {
  const received: Received[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const n = received.length;
      const body = Buffer.concat(chunks).toString('utf8');
      received.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers, body });
      (script[Math.min(n, script.length - 1)] ?? status(204))(res, n);
    });
  });
  await new Promise<void>((ok) => server.listen(listenPort, '127.0.0.1', ok));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    port,
    received,
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((ok) => server.close(() => ok()));
    },
  };
}
