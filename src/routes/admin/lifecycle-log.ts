/**
 * One info line per admin change an operator follows (docs/operations/logs.md): written once the call
 * succeeded, by the process whose route ran it (a relayed call logs on the shard that served it), with
 * the ids of its path and those the route adds (`request.logDetails`): never a body, so never a secret
 * or an e-mail address. Trigger and segment versions are logged where they are committed (trigger-store).
 */
import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyRequest {
    /** Ids the lifecycle line adds to the path's (the new org's slug, the new token's id); set by routes. */
    logDetails: Record<string, string | number | boolean> | null;
  }
}

/** By operationId: the message of its line. */
const LIFECYCLE: Readonly<Record<string, string>> = {
  createOrg: 'org created',
  updateOrg: 'org settings changed',
  deleteOrg: 'org deleted',
  rotateOrgCredentials: 'partner secret rotated',
  rotateWriteKey: 'write key rotated',
  revokeWriteKey: 'write key revoked',
  createToken: 'token created',
  revokeToken: 'token revoked',
  revokeTokensBySelector: 'tokens revoked',
  importContacts: 'contacts imported',
  putTopic: 'topic saved',
  deleteTopic: 'topic deleted',
  putContactConsent: 'consent set by an admin',
  eraseContact: 'erasure requested',
  createFlow: 'flow created',
  replaceFlow: 'flow definition replaced',
  startFlow: 'flow started',
  pauseFlow: 'flow paused',
  runFlow: 'flow run requested',
  deleteFlow: 'flow archived',
};

/** Path parameters as the line names them. */
const PARAM_NAMES: Readonly<Record<string, string>> = { slug: 'org', env: 'env', id: 'id', topic: 'topic' };

export function registerLifecycleLog(admin: FastifyInstance): void {
  admin.decorateRequest('logDetails', null);
  // Set only where a route runs here: a call answered by the relay (another shard's) logs there.
  admin.addHook('preHandler', async (request) => {
    request.logDetails = {};
  });
  admin.addHook('onResponse', async (request, reply) => {
    const operationId = (request.routeOptions.schema as { operationId?: string } | undefined)?.operationId;
    const message = operationId === undefined ? undefined : LIFECYCLE[operationId];
    if (message === undefined || request.logDetails === null || reply.statusCode >= 300) return;
    const ids: Record<string, unknown> = {};
    for (const [param, value] of Object.entries((request.params ?? {}) as Record<string, string>)) {
      const name = PARAM_NAMES[param];
      if (name) ids[name] = value;
    }
    request.log.info({ ...ids, ...request.logDetails }, message);
  });
}
