/**
 * A partner's delivery status in the cluster layout (issue 42): two storage shards and a collector/api
 * process without org databases, real processes on a real nats-server. GET /http/v1/status sent to the
 * collector, or to the shard that does not own the org, is relayed to the owner and answers as the owner
 * does; the owner authenticates the partner again, so a relay request on one org's subject with another
 * org's credentials is refused.
 */
import { join } from 'node:path';
import t from 'tap';
import { connect } from '@nats-io/transport-node';
import { decodeAnswer, encodeRequest } from '../../src/cluster/relay-message.js';
import { shardOf } from '../../src/core/shard.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { ADMIN_KEY, spawnSplitLayout } from '../helpers/server-process.js';
import { scaled, waitFor } from '../helpers/deadline.js';

t.setTimeout(scaled(180_000));
const basic = (user: string, password = '') => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

if (!hasNatsServerBinary()) {
  t.test('partner status across processes', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('partner status through a collector and a non-owning shard', async (t) => {
    const root = t.testdir();
    const nats = await startNatsServer(t);
    const common = { NATS_URL: nats.url, QUERIES_DIR: join(root, 'queries'), LOG_LEVEL: 'warn' };
    const { shards, front } = await spawnSplitLayout(t, root, common);
    const created = await fetch(`${front.url}/admin/v1/orgs`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ slug: 'acme', name: 'Acme' }) });
    t.equal(created.status, 201);
    const creds = ((await created.json()) as { credentials: { production: { partnerId: string; partnerSecret: string } } }).credentials.production;
    const other = ((await (await fetch(`${front.url}/admin/v1/orgs`, { method: 'POST', headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' }, body: JSON.stringify({ slug: 'beta', name: 'Beta' }) })).json()) as { credentials: { production: { partnerId: string; partnerSecret: string } } }).credentials.production;
    const sent = await fetch(`${front.url}/http/v1/collect`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ...creds, clientId: 'c', sentAt: Date.now(), type: 'track', event: 'custom', properties: { eventName: 'booking_completed', properties: {} }, traits: { email: 'ada@example.com' } }),
    });
    t.equal(sent.status, 200);
    const owner = shards[shardOf('acme', 2)]!;
    const notOwner = shards[1 - shardOf('acme', 2)]!;
    const status = async (base: string, authorization = basic(creds.partnerId, creds.partnerSecret)) => {
      const res = await fetch(`${base}/http/v1/status`, { headers: { authorization } });
      const body = (await res.json()) as Record<string, unknown>;
      const comparable: Record<string, unknown> = { ...body, asOf: undefined, requestId: undefined };
      return { status: res.status, body: comparable };
    };
    const direct = await waitFor(
      async () => {
        const answer = await status(owner.url);
        const events = answer.body.events as Array<{ last24Hours: { stored: number } }> | undefined;
        return answer.status === 200 && events?.[0]?.last24Hours.stored === 1 ? answer : undefined;
      },
      { what: 'the event in the owner\'s status', timeoutMs: 30_000 },
    );
    t.match(direct.body, { org: 'acme', environment: 'production' });
    const viaFront = await status(front.url);
    const viaOther = await status(notOwner.url);
    t.same(viaFront.body, direct.body, 'through the collector: the owner\'s answer');
    t.same(viaOther.body, direct.body, 'through the other shard: the owner\'s answer');
    t.equal((await status(front.url, basic(creds.partnerId, 'wrong'))).status, 401, 'wrong credentials: refused where they arrive');

    // On acme's subject with beta's credentials: the owner refuses, whatever a NATS client sends.
    const nc = await connect({ servers: nats.url });
    t.teardown(() => nc.close());
    const msg = await nc.request('audience.admin.acme', new Uint8Array(), {
      timeout: 10_000,
      headers: encodeRequest({ method: 'GET', url: '/http/v1/status', requestId: 'forged' }, { authorization: basic(other.partnerId, other.partnerSecret) }),
    });
    const answer = decodeAnswer(msg.headers, msg.data);
    t.equal(answer?.status, 401, "another org's partner on this org's subject is refused");
  });
}
