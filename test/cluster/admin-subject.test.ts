/**
 * Subjects are only ever built from slugs, and the list of relayed sections matches the routes the
 * org-database route files register (a route added there without its section would be answered by an
 * api process that has no database).
 */
import t from 'tap';
import Fastify from 'fastify';
import { registerInspectRoutes } from '../../src/routes/admin/orgs/events.js';
import { registerOrgRoutes } from '../../src/routes/admin/orgs.js';
import { adminSubject, isSlug, orgOfDatabasePath } from '../../src/cluster/admin-subject.js';
import { registerFlowRoutes } from '../../src/routes/admin/orgs/flows/index.js';
import { registerImportRoutes } from '../../src/routes/admin/orgs/contacts-import.js';
import { registerTokenRoutes } from '../../src/routes/admin/orgs/tokens.js';
import { registerTriggerRoutes } from '../../src/routes/admin/orgs/triggers.js';
import { registerContactRoute } from '../../src/routes/admin/orgs/contacts.js';
import { registerTopicRoutes } from '../../src/routes/admin/orgs/topics.js';
import { registerErasureRoutes } from '../../src/routes/admin/orgs/erasures.js';
import { registerPlanRoutes } from '../../src/routes/admin/orgs/plans.js';
import { registerAlertRoutes } from '../../src/routes/admin/orgs/alerts.js';

t.test('a subject is built from a slug and nothing else', async (t) => {
  t.equal(adminSubject('acme'), 'audience.admin.acme');
  t.equal(adminSubject('a1_b2'), 'audience.admin.a1_b2');
  t.equal(adminSubject('a'.repeat(40)), `audience.admin.${'a'.repeat(40)}`);
  for (const hostile of ['', 'a', '..', '.', '*', '>', 'a.b', 'a.*', 'a.>', 'a b', 'a\tb', 'a\r\nb', 'A', 'Acme', '1a', '_a', 'a-b', 'a'.repeat(41), 'café', 'a\u0000']) {
    t.equal(adminSubject(hostile), undefined, JSON.stringify(hostile));
    t.notOk(isSlug(hostile));
  }
});

t.test('the org of an org-database path, undefined for every other path', async (t) => {
  t.equal(orgOfDatabasePath('/admin/v1/orgs/acme/events/samples?limit=5'), 'acme');
  t.equal(orgOfDatabasePath('/admin/v1/orgs/%61cme/flows'), 'acme', 'decoded like the router decodes it');
  t.equal(orgOfDatabasePath('/admin/v1/orgs/:slug/flows/:id/sends'), ':slug');
  for (const path of ['/admin/v1/orgs', '/admin/v1/orgs/acme', '/admin/v1/orgs/acme/', '/admin/v1/orgs/acme/tokens', '/admin/v1/orgs/acme/partner-keys/staging/rotate', '/v1/collect', '/metrics', '/admin/v1/orgs/%E0%A4%A/flows', '/admin/v1/orgs/acme?x=/flows']) {
    t.equal(orgOfDatabasePath(path), undefined, path);
  }
});

t.test('the relayed sections are exactly the org-database route files’ routes', async (t) => {
  const routesOf = (register: (app: ReturnType<typeof Fastify>) => void): string[] => {
    const app = Fastify();
    const urls: string[] = [];
    app.addHook('onRoute', (route) => void urls.push(`${route.method} ${route.url}`));
    register(app);
    return urls;
  };
  const deps = {} as never;
  const orgDatabase = [
    ...routesOf((app) => registerInspectRoutes(app, deps)),
    ...routesOf((app) => registerImportRoutes(app, deps)),
    ...routesOf((app) => registerTriggerRoutes(app, deps)),
    ...routesOf((app) => registerFlowRoutes(app, deps)),
    ...routesOf((app) => registerContactRoute(app, deps)),
    ...routesOf((app) => registerTopicRoutes(app, deps)),
    ...routesOf((app) => registerErasureRoutes(app, deps)),
    ...routesOf((app) => registerPlanRoutes(app, deps)),
    ...routesOf((app) => registerAlertRoutes(app, deps)),
  ];
  t.ok(orgDatabase.length >= 15, `${orgDatabase.length} routes`);
  for (const route of orgDatabase) t.equal(orgOfDatabasePath(route.split(' ')[1]!), ':slug', `${route} is relayed`);
  const controlPlane = [...routesOf((app) => registerOrgRoutes(app, deps, deps)), ...routesOf((app) => registerTokenRoutes(app, deps))];
  t.ok(controlPlane.length >= 5, `${controlPlane.length} routes`);
  for (const route of controlPlane) t.equal(orgOfDatabasePath(route.split(' ')[1]!), undefined, `${route} is answered locally`);
});
