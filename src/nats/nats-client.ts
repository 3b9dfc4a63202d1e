/** The service's NATS connections and KV buckets. An existing bucket is used as it is (an operator may have changed its replicas), else it is made. */
import { jetstream } from '@nats-io/jetstream';
import { type KV, Kvm } from '@nats-io/kv';
import { readFileSync } from 'node:fs';
import { type ConnectionOptions, connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { Config } from '../core/config.js';

/** How the service proves itself to NATS and checks the server: NATS_CREDS, NATS_USER/NATS_PASSWORD, NATS_TLS_*. */
export interface NatsSecurity {
  credsFile?: string;
  user?: string;
  password?: string;
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
}

export async function openBucket(nc: NatsConnection, name: string, options: { history: number; replicas: number; timeoutMs?: number }): Promise<KV> {
  const timeout = options.timeoutMs;
  const kvm = new Kvm(timeout === undefined ? jetstream(nc) : jetstream(nc, { timeout }));
  const existing = await kvm.open(name, timeout === undefined ? {} : { timeout });
  const exists = await existing.status().then(
    () => true,
    () => false,
  );
  return exists ? existing : kvm.create(name, { history: options.history, replicas: options.replicas, ...(timeout === undefined ? {} : { timeout }) });
}

/** A connection that reconnects forever: after a NATS restart the service recovers without a restart of its own. */
export function connectNats(servers: string, security: NatsSecurity = {}): Promise<NatsConnection> {
  return connect({ servers: servers.split(',').map((s) => s.trim()), maxReconnectAttempts: -1, ...connectionSecurity(security) });
}

function connectionSecurity(security: NatsSecurity): Partial<ConnectionOptions> {
  return {
    ...(security.credsFile ? { authenticator: credsAuthenticator(new Uint8Array(readFileSync(security.credsFile))) } : {}),
    ...(security.user !== undefined ? { user: security.user, pass: security.password ?? '' } : {}),
    ...(security.tls ? { tls: security.tls } : {}),
  };
}

/**
 * Start-up steps that need JetStream (a stream, a bucket, a watch) wait out a cluster electing its
 * leaders: after a node dies, 2.9 answers nothing for 4–9 s (test/cluster/failover.test.ts), and a
 * process restarted then must start, not exit. Only once connected: no server at all fails at once.
 */
export async function whileElecting<T>(work: () => Promise<T>, withinMs = 60_000): Promise<T> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    try {
      return await work();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}

/** What every NATS connection of the service authenticates and verifies with. */
export function natsSecurity(config: Config): NatsSecurity {
  const tls = {
    ...(config.natsTlsCa ? { caFile: config.natsTlsCa } : {}),
    ...(config.natsTlsCert ? { certFile: config.natsTlsCert } : {}),
    ...(config.natsTlsKey ? { keyFile: config.natsTlsKey } : {}),
  };
  return {
    ...(config.natsCreds ? { credsFile: config.natsCreds } : {}),
    ...(config.natsUser !== undefined ? { user: config.natsUser, password: config.natsPassword ?? '' } : {}),
    ...(Object.keys(tls).length > 0 ? { tls } : {}),
  };
}
