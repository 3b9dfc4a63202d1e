/**
 * Which calls go to the shard that owns the org, and on which NATS subject: the org-database admin
 * paths, and the public unsubscribe links (`/unsubscribe/<token>`, whose org is sealed in the token).
 * One subject per org (`audience.admin.<slug>`): while no process serves the org there is no
 * subscriber, so a request gets NATS "no responders" at once instead of waiting for its timeout.
 */

export const ADMIN_SUBJECT_PREFIX = 'audience.admin';

/** schemas/org.schema.json's slug: no `.`, `*`, `>` or space, so a slug is always one literal subject token. */
const SLUG = /^[a-z][a-z0-9_]{1,39}$/;

/**
 * The first path segment after `/admin/v1/orgs/<slug>/` of the routes that read or write the org's
 * database (src/routes/admin/orgs/events.ts, src/routes/admin/orgs/contacts-import.ts, src/routes/admin/orgs/triggers.ts,
 * src/routes/admin/orgs/flows/index.ts). Org CRUD and tokens live in the control plane and are answered where they
 * arrive. test/cluster/admin-subject.test.ts checks this list against the routes those files register.
 */
export const ORG_DATABASE_SECTIONS: ReadonlySet<string> = new Set([
  'events',
  'quarantine',
  'contacts',
  'triggers',
  'segments',
  'traits',
  'flows',
  'webhook-secret',
  'topics',
  'erasures',
  'alerts',
]);

const ORGS_PREFIX = '/admin/v1/orgs/';

export function isSlug(value: string): boolean {
  return SLUG.test(value);
}

/** The org's admin subject; undefined for anything that is not a slug, so no input can form a wildcard. */
export function adminSubject(slug: string): string | undefined {
  return isSlug(slug) ? `${ADMIN_SUBJECT_PREFIX}.${slug}` : undefined;
}

/**
 * The org of an org-database admin path (`/admin/v1/orgs/<slug>/<section>…`, query string allowed),
 * undefined for any other path. Works on a route pattern too (`/admin/v1/orgs/:slug/flows/:id` gives
 * `:slug`). The slug segment is percent-decoded the way the router decodes it.
 */
export function orgOfDatabasePath(url: string): string | undefined {
  const path = url.split('?', 1)[0]!;
  if (!path.startsWith(ORGS_PREFIX)) return undefined;
  const [slugSegment, section] = path.slice(ORGS_PREFIX.length).split('/', 2);
  if (slugSegment === undefined || section === undefined || !ORG_DATABASE_SECTIONS.has(section)) return undefined;
  try {
    return decodeURIComponent(slugSegment);
  } catch {
    return undefined;
  }
}

const UNSUBSCRIBE_PREFIX = '/unsubscribe/';

/**
 * The token of an unsubscribe link's path (`/unsubscribe/<token>`, query string allowed), percent-decoded
 * as the router decodes it; undefined for any other path.
 */
export function tokenOfUnsubscribePath(url: string): string | undefined {
  const path = url.split('?', 1)[0]!;
  const segment = path.startsWith(UNSUBSCRIBE_PREFIX) ? path.slice(UNSUBSCRIBE_PREFIX.length) : '';
  if (segment === '' || segment.includes('/')) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}
