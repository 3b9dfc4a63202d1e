/** TCP ports free on 127.0.0.1 for test servers. */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** A TCP port free on 127.0.0.1 right now (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return listenOn(0);
}

/** Ports below this are the well-known ones and those of the machine's own services. */
const LOWEST = 10_000;

/**
 * A TCP port free on 127.0.0.1 right now, below the kernel's range for outgoing connections (32768–60999 by
 * default), for a server restarted on the same port. freePort() answers from that range, and while its
 * server was down an outgoing connection of any process could be given the port: a nats-server restarted in
 * the suite once failed "bind: address already in use" on its monitoring port. Below the range only an
 * explicit listen can take it.
 */
export async function restartablePort(): Promise<number> {
  const firstEphemeral = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  const below = Number.isInteger(firstEphemeral) && firstEphemeral > LOWEST + 1_000 ? firstEphemeral : 32_768;
  for (let attempt = 0; attempt < 100; attempt++) {
    const port = LOWEST + Math.floor(Math.random() * (below - LOWEST));
    const free = await listenOn(port).then(
      () => true,
      () => false,
    );
    if (free) return port;
  }
  throw new Error(`no free port between ${LOWEST} and ${below} in 100 tries`);
}

function listenOn(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(bound));
    });
  });
}
