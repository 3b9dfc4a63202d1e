/**
 * Shard side of the relay: a NATS micro service (`audience-shard`, @nats-io/services) with one
 * endpoint per owned org on `audience.admin.<slug>`, for its admin calls and its unsubscribe links.
 * Operators see the shards and their per-org request counts with `nats micro ls` / `nats micro stats
 * audience-shard`. Every shard process joins the queue group `audience-shard`, so during a rolling
 * restart the old and the new process of a shard split the requests instead of both answering.
 *
 * @nats-io/services 3.0.0-25 pins @nats-io/nats-core 3.0.0-50, whose NatsConnection type does not match
 * 3.4's; package.json `overrides` gives it our nats-core (one copy; test/cluster runs it against
 * nats-server 2.9.10).
 */
import { type Service, type ServiceMsg, Svcm } from '@nats-io/services';
import type { NatsConnection } from '@nats-io/transport-node';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { AppError } from '../core/errors.js';
import { adminSubject } from './admin-subject.js';
import {
  DEFAULT_MAX_PAYLOAD,
  RELAY_PROTOCOL_VERSION,
  type RelayAnswer,
  decodeRequest,
  encodeAnswer,
  natsHeaderBytes,
  relayedRequestId,
} from './relay-message.js';
import { problemAnswer, replayRequest } from './replay-request.js';

export const SHARD_SERVICE = 'audience-shard';

export interface ServeOrgAdminOptions {
  nc: NatsConnection;
  /** The shard's app, with the org-database admin routes registered (they are reached by `inject()`). */
  app: FastifyInstance;
  /** Whether this process owns the org (`ownsOrg(config.shard, slug)`); `addOrg` ignores the others. */
  owned(slug: string): boolean;
  /** SHA-256 of ADMIN_KEY (`AdminKey.hash`): checked on every relayed admin request. */
  adminKeyHash: string;
  /** The org an unsubscribe link's token names (`UnsubscribeLinks.open`): a relayed link is answered only on its org's subject. */
  orgOfLink(token: string): string | undefined;
  /** The org of a partner's Basic credentials: a relayed delivery status is answered only on its org's subject. */
  orgOfPartner(authorization: string | undefined): string | undefined;
  /** The org of an Audience API token: a relayed lookup is answered only on its org's subject. */
  orgOfAudienceToken(authorization: string | undefined): string | undefined;
  /** Default: the app's logger. */
  logger?: FastifyBaseLogger;
}

export interface OrgAdminServer {
  /**
   * Answers the org's admin subject; resolves once the server has the subscription (before that a
   * request gets "no responders"). false, nothing done, when this shard does not own the org. Idempotent.
   */
  addOrg(slug: string): Promise<boolean>;
  /**
   * Stops answering for the org. The framework cannot drop one endpoint (a closed endpoint stops the
   * whole service), so the service is rebuilt without it; the other orgs stay answered throughout.
   */
  removeOrg(slug: string): Promise<void>;
  /** The orgs answered now. */
  orgs(): string[];
  /** Drains the subscriptions: requests already received are answered, new ones get "no responders". */
  close(): Promise<void>;
}

export async function serveOrgAdmin(options: ServeOrgAdminOptions): Promise<OrgAdminServer> {
  const { nc, owned } = options;
  const deps = { app: options.app, adminKeyHash: options.adminKeyHash, orgOfLink: options.orgOfLink, orgOfPartner: options.orgOfPartner, orgOfAudienceToken: options.orgOfAudienceToken, logger: options.logger ?? options.app.log };
  const served = new Set<string>();
  let closed = false;
  let rebuilding = Promise.resolve();

  const start = async (): Promise<Service> => {
    const service = await new Svcm(nc).add({
      name: SHARD_SERVICE,
      version: RELAY_PROTOCOL_VERSION,
      description: 'Admin calls on the orgs this storage shard owns',
      queue: SHARD_SERVICE,
    });
    void service.stopped.then((error) => {
      if (error && !closed) deps.logger.error({ err: error }, `the ${SHARD_SERVICE} service stopped: admin calls on this shard's orgs answer 503`);
    });
    return service;
  };
  const addEndpoint = (service: Service, slug: string): void => {
    service.addEndpoint(slug, {
      subject: adminSubject(slug)!,
      handler: (error, msg) => {
        if (!error) void answer(msg, slug);
      },
    });
  };
  const answer = async (msg: ServiceMsg, slug: string): Promise<void> => {
    let reply: RelayAnswer;
    try {
      reply = await replayRequest(deps, slug, decodeRequest(msg.headers, msg.data));
    } catch (error) {
      deps.logger.error({ err: error }, 'relayed admin request failed');
      reply = problemAnswer(new AppError('internal_error'), relayedRequestId(msg.headers));
    }
    let headers = encodeAnswer(reply.status, reply.headers);
    const maxPayload = nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
    if (natsHeaderBytes(headers) + reply.body.byteLength > maxPayload) {
      const detail = `the answer (${reply.body.byteLength} bytes) is over the NATS max_payload (${maxPayload} bytes): ask for fewer rows with limit`;
      reply = problemAnswer(new AppError('shard_answer_too_large', detail), relayedRequestId(msg.headers));
      headers = encodeAnswer(reply.status, reply.headers);
    }
    try {
      msg.respond(reply.body, { headers });
    } catch (error) {
      // The connection closed or is draining: the requester times out and answers 503.
      deps.logger.warn({ err: error }, 'could not answer a relayed admin request');
    }
  };

  let service = await start();
  return {
    async addOrg(slug) {
      if (closed || !owned(slug)) return false;
      if (adminSubject(slug) === undefined) throw new Error(`not a slug: ${JSON.stringify(slug)}`);
      if (!served.has(slug)) {
        served.add(slug);
        addEndpoint(service, slug);
      }
      await nc.flush();
      return true;
    },
    removeOrg(slug) {
      const run = rebuilding.then(async () => {
        if (closed || !served.delete(slug)) return;
        const next = await start();
        for (const org of served) addEndpoint(next, org);
        // Orgs added from here on go to the new service; the old one answers until the new one's
        // subscriptions have reached the server, so no org sees "no responders" on the way.
        const previous = service;
        service = next;
        await nc.flush();
        await previous.stop();
      });
      // One rebuild at a time; a failed one does not block the next.
      rebuilding = run.catch(() => {});
      return run;
    },
    orgs: () => [...served],
    async close() {
      closed = true;
      await rebuilding;
      await service.stop();
    },
  };
}
