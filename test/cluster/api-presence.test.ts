/** The live api processes as each counts them (the share of an org's budget while Redis is out of reach). */
import { connect } from '@nats-io/transport-node';
import t from 'tap';
import { announceApi } from '../../src/cluster/api-presence.js';
import { hasNatsServerBinary, startNatsServer } from '../helpers/nats-server.js';
import { until } from '../helpers/deadline.js';

if (!hasNatsServerBinary()) {
  t.test('api presence', { skip: 'nats-server binary not installed' }, () => {});
} else {
  t.test('each api process counts the others within one counting period; a stopped one drops out', async (t) => {
    const nats = await startNatsServer(t);
    const connections = await Promise.all([1, 2, 3].map(() => connect({ servers: nats.url })));
    t.teardown(() => Promise.all(connections.map((nc) => nc.close())));
    const first = await announceApi(connections[0]!);
    t.equal(first.live(), 1, 'alone');
    const second = await announceApi(connections[1]!);
    const third = await announceApi(connections[2]!);
    t.equal(third.live(), 3, 'a process starting counts every one, itself included');
    await until(() => first.live() === 3 && second.live() === 3, 7000, 50);
    t.equal(first.live(), 3, 'the first sees the others within a counting period');
    await third.close();
    await until(() => first.live() === 2, 7000, 50);
    t.equal(first.live(), 2, 'a stopped process drops out');
    await Promise.all([first.close(), second.close()]);
  });
}

