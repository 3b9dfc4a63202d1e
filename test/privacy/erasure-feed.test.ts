/**
 * NATS mode: an erased contact's profile leaves the profile bucket (history included), and `api`
 * processes following the bucket drop it from their serving index, whether they follow already or
 * start after the erasure. Real nats-server.
 */
import t from 'tap';
import { ProfileFeed } from '../../src/events/profiles/profile-feed.js';
import { emailHash, ProfileIndex } from '../../src/events/profiles/profile-index.js';
import { waitFor } from '../helpers/app.js';
import { hasNatsServerBinary } from '../helpers/nats-cluster.js';
import { startNatsServer } from '../helpers/nats-server.js';

if (!hasNatsServerBinary()) {
  t.test('erasure in the profile feed', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('an erased profile leaves the bucket and every follower', async (t) => {
    const nats = await startNatsServer(t);
    const open = async () => {
      const feed = await ProfileFeed.open({ servers: nats.url, replicas: 1, bucket: 'erasure_feed' }, (error) => t.error(error));
      t.teardown(() => feed.close());
      return feed;
    };
    const shard = await open();
    for (const email of ['ada@example.com', 'bob@example.com']) await shard.publish('acme', { email_address: email, user_id: `u-${email}` }, []);
    await shard.publish('beta', { email_address: 'ada@example.com' }, []);
    await shard.flushed();

    const api = new ProfileIndex();
    await (await open()).follow(api, () => false);
    t.ok(api.find('acme', 'email', 'ada@example.com'), 'followed');

    await shard.remove('acme', emailHash('ada@example.com'));
    await waitFor(async () => api.find('acme', 'email', 'ada@example.com') === undefined);
    t.equal(api.find('acme', 'user_id', 'u-ada@example.com'), undefined, 'by every identity');
    t.equal(api.find('acme', 'email-hash', emailHash('ada@example.com')), undefined);
    t.ok(api.find('acme', 'email', 'bob@example.com'), 'another contact stays');
    t.ok(api.find('beta', 'email', 'ada@example.com'), "the same address in another org stays");

    const later = new ProfileIndex();
    await (await open()).follow(later, () => false);
    t.equal(later.find('acme', 'email', 'ada@example.com'), undefined, 'a follower that starts afterwards never sees it');
    t.equal(later.size('acme'), 1);
  });
}
