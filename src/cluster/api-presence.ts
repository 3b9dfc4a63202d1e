/**
 * How many `api` processes are live (NATS mode): each registers the micro service `audience-api`, and
 * each asks `$SRV.PING.audience-api` every few seconds. While Redis is out of reach, a process limits an
 * org to rateLimit divided by this count, so the processes together stay near the org's budget
 * (ratelimit/fallback-limiter.ts). A process that cannot ask keeps its last count, at least 1.
 */
import { Svcm, type Service } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import { RELAY_PROTOCOL_VERSION } from './relay-message.js';

export const API_SERVICE = 'audience-api';
/** Often enough that a process joining or leaving changes the others' shares within seconds. */
const COUNT_EVERY_MS = 5000;
/** A ping answer comes in milliseconds; waiting longer only delays the count. */
const PING_WAIT_MS = 500;

export interface ApiPresence {
  /** API processes answering the last ping, this one included; at least 1. */
  live(): number;
  close(): Promise<void>;
}

export async function announceApi(nc: NatsConnection, onError: (error: unknown) => void = () => {}): Promise<ApiPresence> {
  const svcm = new Svcm(nc);
  const service: Service = await svcm.add({ name: API_SERVICE, version: RELAY_PROTOCOL_VERSION, description: 'An Audience api process' });
  let live = 1;
  const count = async (): Promise<void> => {
    let answered = 0;
    for await (const _ of await svcm.client({ maxWait: PING_WAIT_MS, strategy: 'timer' }).ping(API_SERVICE)) answered++;
    live = Math.max(1, answered);
  };
  await count().catch(onError);
  const timer = setInterval(() => void count().catch(onError), COUNT_EVERY_MS);
  timer.unref();
  return {
    live: () => live,
    async close() {
      clearInterval(timer);
      await service.stop().catch(() => undefined);
    },
  };
}
