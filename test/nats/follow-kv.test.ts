/**
 * followKv on a real 3-node cluster: the node holding the follower's watch consumer is killed -9, and
 * the follower still sees values put afterwards within seconds (a bare watch() stays silent 61–100 s
 * then: test/cluster/failover.test.ts). Plus the load-then-follow contract on a single server.
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KvEntry } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { followKv } from '../../src/nats/follow-kv.js';
import { hasNatsServerBinary, startNatsCluster } from '../helpers/nats-cluster.js';
import { startNatsServer } from '../helpers/nats-server.js';
import { connectTo } from '../cluster/cluster-setup.js';
import { until } from '../helpers/deadline.js';

/** 2.9 elects a new leader after a random 4–9 s; a new consumer needs it, plus the two 1 s checks. */
const RECOVERY_MS = 25_000;

if (!hasNatsServerBinary()) {
  t.test('followKv', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('loads every value present, then follows changes; a throwing receiver does not stop it', async (t) => {
    const nats = await startNatsServer(t);
    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());
    const kv = await new Kvm(nc).create('follow_single');
    for (let i = 0; i < 50; i++) await kv.put(`k.${i}`, String(i));
    const seen = new Map<string, string>();
    const errors: unknown[] = [];
    const follower = await followKv(
      kv,
      (entry) => {
        if (entry.key === 'k.bad') throw new Error('cannot take this one in');
        seen.set(entry.key, entry.string());
      },
      (error) => errors.push(error),
    );
    t.teardown(() => follower.stop());
    t.equal(seen.size, 50, 'every value present at the call is in once it resolves');
    await kv.put('k.bad', 'x');
    await kv.put('k.after', 'y');
    await until(() => seen.has('k.after'), 5000);
    t.equal(seen.get('k.after'), 'y', 'a change after a receiver error is still delivered');
    t.equal(errors.length, 1, 'the error was reported');
  });

  t.test('the node holding the watch consumer is killed: the follower resumes within seconds, missing nothing', async (t) => {
    const cluster = await startNatsCluster(t);
    const writer = await connectTo(t, cluster, cluster.nodes[0]);
    const jsm = await jetstreamManager(writer);
    const kv = await new Kvm(writer).create('follow_failover', { replicas: 3 });
    await kv.put('n.0', '0');
    const reader = await connectTo(t, cluster, cluster.nodes[1]);
    const seen: KvEntry[] = [];
    const follower = await followKv(await new Kvm(reader).open('follow_failover'), (entry) => seen.push(entry));
    t.teardown(() => follower.stop());
    const [consumer] = await jsm.consumers.list('KV_follow_failover').next();
    const victim = cluster.nodes.find((n) => n.name === consumer?.cluster?.leader);
    t.ok(victim, `the watch consumer is on ${consumer?.cluster?.leader}`);
    victim!.kill9();
    const killedAt = Date.now();
    // Puts from a surviving node, retried until the bucket has a leader again.
    const survivor = cluster.nodes.find((n) => n !== victim)!;
    const putter = await connectTo(t, cluster, survivor);
    const kvAfter = await new Kvm(putter).open('follow_failover');
    for (let n = 1; n <= 5; n++) {
      for (;;) {
        try {
          await kvAfter.put(`n.${n}`, String(n));
          break;
        } catch {
          await new Promise((r) => setTimeout(r, 200));
        }
      }
    }
    await until(() => seen.some((e) => e.key === 'n.5'), RECOVERY_MS);
    const after = Date.now() - killedAt;
    t.ok(seen.some((e) => e.key === 'n.5'), `the last value put after the kill is seen (${after} ms after it)`);
    t.same(seen.map((e) => e.key), ['n.0', 'n.1', 'n.2', 'n.3', 'n.4', 'n.5'], 'every change once, in order');
  });
}

