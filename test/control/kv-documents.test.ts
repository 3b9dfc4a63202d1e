/**
 * The control plane in JetStream KV against the shared contract, on the machine's NATS with a throwaway
 * bucket per test; `second` is another connection, as another process would have.
 */
import { randomBytes } from 'node:crypto';
import { jetstream } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { KvDocuments } from '../../src/control/kv-documents.js';
import { natsUrl, natsUrlIfReachable } from '../helpers/nats-server.js';
import { controlContract } from './contract.js';

const run = randomBytes(4).toString('hex');
const url = await natsUrlIfReachable();
if (url === undefined) {
  t.comment(`skipped: NATS not reachable at ${natsUrl()}`);
  t.test('kv control contract', { skip: `NATS not reachable at ${natsUrl()}` }, () => {});
} else {
  const admin = await connect({ servers: url });
  const kvm = new Kvm(jetstream(admin));
  t.teardown(() => admin.close());
  let buckets = 0;
  controlContract(t, 'kv', async (t) => {
    const bucket = `test_control_${run}_${++buckets}`;
    const open = () => KvDocuments.open({ servers: url, bucket });
    const opened = [await open(), await open()];
    t.teardown(async () => {
      await Promise.all(opened.map((o) => o.close()));
      await (await kvm.open(bucket)).destroy().catch(() => undefined);
    });
    return {
      first: opened[0]!,
      second: opened[1]!,
      async reopen() {
        await Promise.all(opened.map((o) => o.close()));
        const again = await open();
        opened.push(again);
        return again;
      },
    };
  });
}
