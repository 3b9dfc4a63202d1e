/** NATS mode, api or storage role: the connection admin calls are relayed over between processes. */
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { connectNats, natsSecurity } from '../nats/nats-client.js';
import { hasStorageRole } from './service.js';

declare module 'fastify' {
  interface FastifyInstance {
    adminNats: NatsConnection | undefined;
  }
}

export const natsPlugin = fp(
  async (app: FastifyInstance) => {
    const { config } = app;
    const nc = config.natsUrl && (config.roles.includes('api') || hasStorageRole(config)) ? await connectNats(config.natsUrl, natsSecurity(config)) : undefined;
    app.decorate('adminNats', nc);
    app.addHook('onClose', async () => nc?.close());
  },
  { name: 'audience-nats', dependencies: ['audience-service'] },
);
