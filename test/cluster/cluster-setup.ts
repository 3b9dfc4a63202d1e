/**
 * Arranging a failover on a test cluster: connections that start on a chosen node, moving a stream's
 * or consumer's leadership onto a node, and KV watchers whose (R1, ephemeral) consumer lives on a
 * chosen node. nats-server places a watcher's consumer on a random peer of the bucket's stream,
 * whichever server the client is connected to, so the helper creates watchers until one lands.
 */
import type { JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { Empty, connect, type NatsConnection } from '@nats-io/transport-node';
import type { Test } from 'tap';
import type { NatsClusterHandle, NatsClusterNode } from '../helpers/nats-cluster.js';
import { startKvWatcher, type KvWatchProbe } from './probes.js';
import { sleep } from '../helpers/deadline.js';

/** A connection to `first`, then the other nodes in order on reconnect; never gives up reconnecting. */
export async function connectTo(t: Test, cluster: NatsClusterHandle, first: NatsClusterNode): Promise<NatsConnection> {
  const others = cluster.nodes.filter((n) => n !== first).map((n) => n.url);
  const nc = await connect({ servers: [first.url, ...others], noRandomize: true, maxReconnectAttempts: -1 });
  t.teardown(() => (nc.isClosed() ? undefined : nc.close()));
  return nc;
}

/**
 * Steps the stream's (or consumer's) leader down until `target` leads it. A step-down elects one of
 * the other peers at random, so with three peers this takes a few tries.
 */
export async function moveLeader(
  nc: NatsConnection,
  jsm: JetStreamManager,
  target: string,
  stream: string,
  consumer?: string,
): Promise<void> {
  const api = consumer === undefined ? `STREAM.LEADER.STEPDOWN.${stream}` : `CONSUMER.LEADER.STEPDOWN.${stream}.${consumer}`;
  for (let i = 0; i < 40; i++) {
    const info = await (consumer === undefined ? jsm.streams.info(stream) : jsm.consumers.info(stream, consumer)).catch(() => undefined);
    const leader = info?.cluster?.leader;
    if (leader === target) return;
    if (leader !== undefined) await nc.request(`$JS.API.${api}`, Empty, { timeout: 2_000 }).catch(() => {});
    await sleep(250);
  }
  throw new Error(`could not move the leader of ${consumer ?? stream} to ${target}`);
}

/** Where the consumers of a stream live, by name. */
export async function consumerPlacement(jsm: JetStreamManager, stream: string): Promise<Map<string, string | undefined>> {
  const list = await jsm.consumers.list(stream).next();
  return new Map(list.map((c) => [c.name, c.cluster?.leader]));
}

/**
 * A watcher on `key` over `nc` whose consumer lives on `on` (or, with `on` negated, anywhere else).
 * Watchers that landed elsewhere are stopped and their consumers deleted.
 */
export async function watcherWithConsumer(
  nc: NatsConnection,
  jsm: JetStreamManager,
  bucket: string,
  key: string,
  on: { node: string; negate?: boolean },
): Promise<KvWatchProbe> {
  const kv = await new Kvm(nc).open(bucket);
  for (let i = 0; i < 20; i++) {
    const before = await consumerPlacement(jsm, `KV_${bucket}`);
    const probe = await startKvWatcher(kv, key);
    const after = await consumerPlacement(jsm, `KV_${bucket}`);
    const [name, leader] = [...after].find(([n]) => !before.has(n)) ?? [];
    if (name !== undefined && (leader === on.node) !== (on.negate === true)) return probe;
    await probe.stop();
    if (name !== undefined) await jsm.consumers.delete(`KV_${bucket}`, name).catch(() => {});
  }
  throw new Error(`no watcher consumer landed ${on.negate ? 'off' : 'on'} ${on.node}`);
}
