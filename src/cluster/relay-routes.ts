/**
 * For an `api` process that keeps no org databases: the org-database admin paths as routes of their
 * own that only relay, so the real route files (and the storage they need) are not registered there.
 * Register inside the admin scope, after `adminAuth`. A process that owns some orgs registers the real
 * routes with the `relayOrgAdmin` hook instead; the two do not go together.
 */
import type { FastifyInstance } from 'fastify';
import { ORG_DATABASE_SECTIONS } from './admin-subject.js';
import { relayOrgAdmin, type RelayOrgAdminOptions } from './relay-org-admin.js';

/** HEAD comes with GET (Fastify's exposeHeadRoutes). */
const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export function registerRelayRoutes(admin: FastifyInstance, options: Omit<RelayOrgAdminOptions, 'isLocal'>): void {
  const relay = relayOrgAdmin({ ...options, isLocal: () => false });
  for (const section of ORG_DATABASE_SECTIONS) {
    for (const url of [`/admin/v1/orgs/:slug/${section}`, `/admin/v1/orgs/:slug/${section}/*`]) {
      admin.route({
        method: METHODS,
        url,
        onRequest: relay,
        // Left out of /openapi.json: it documents the routes these relay to (routes/admin/orgs/).
        schema: { hide: true },
        // The hook answers every request these routes match.
        handler: async () => {
          throw new Error(`${url} was not relayed`);
        },
      });
    }
  }
}
