/**
 * API side of the admin relay: an `onRequest` hook for the admin routes. A call on an org-database
 * route (see ORG_DATABASE_SECTIONS) of an org this process does not serve goes to the org's subject
 * over NATS request-reply, and the shard's answer is written back unchanged: status, headers (less
 * hop-by-hop ones) and body bytes. Add it after `adminAuth`, so the admin key is checked here before
 * anything is relayed (the shard checks it again).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../core/errors.js';
import { adminSubject, orgOfDatabasePath } from './admin-subject.js';
import { readBody } from './read-body.js';
import { DEFAULT_MAX_PAYLOAD } from './relay-message.js';
import { relayToShard, type RelayToShardOptions } from './relay-to-shard.js';

export interface RelayOrgAdminOptions extends RelayToShardOptions {
  /** Whether this process answers the org itself (it owns the org's database). */
  isLocal(slug: string): boolean;
  /** Whether the org exists (the control plane, which every process has): an unknown org is a 404 here, not a relay. */
  orgExists(slug: string): boolean;
}

export function relayOrgAdmin(options: RelayOrgAdminOptions) {
  const { nc, isLocal } = options;
  const shard = relayToShard(options);
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    if (orgOfDatabasePath(request.routeOptions.url ?? '') !== ':slug') return undefined;
    const slug = (request.params as { slug?: string }).slug ?? '';
    // The route's own schema would refuse it too, but only later: no subject is built from a non-slug.
    if (adminSubject(slug) === undefined) throw new AppError('invalid_request', 'slug must match ^[a-z][a-z0-9_]{1,39}$');
    if (isLocal(slug)) return undefined;
    if (!options.orgExists(slug)) throw new AppError('org_not_found', `no org "${slug}"`);

    const room = shard.room(request);
    const body = await readBody(request.raw, room);
    if (body.outcome === 'too_large') {
      const maxPayload = nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD;
      throw new AppError(
        'payload_too_large',
        `an admin call on org ${slug} is relayed to its storage shard over NATS, which carries at most ${room} bytes of body here ` +
          `(max_payload ${maxPayload} less the headers): split the import into files under ${room} bytes, or raise max_payload on the NATS servers`,
      );
    }
    return shard.send(request, reply, { slug, body: body.body, org: `org ${slug}` });
  };
}
