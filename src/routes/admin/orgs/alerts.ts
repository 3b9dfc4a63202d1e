/**
 * The org's quarantine alert (issue 42): PUT/GET/DELETE /admin/v1/orgs/:slug/alerts/quarantine. Checked and
 * sent by the processes with the flows role (reactions/alerts/quarantine-alerts.ts), signed with the org's
 * webhook secret (GET …/webhook-secret) as flow webhooks are.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../../../control/org-store.js';
import { AppError } from '../../../core/errors.js';
import type { QuarantineAlert, QuarantineAlerts } from '../../../reactions/alerts/quarantine-alerts.js';
import { checkWebhookUrl } from '../../../reactions/channels/target-guard.js';
import { object, operationSchema } from '../../../openapi/route-schema.js';
import { ORG_DATA, slugOnly } from '../schema-parts.js';

const tag = 'Admin: org data' as const;
const auth = 'adminKey' as const;
const alert = object({
  url: { type: 'string', minLength: 1, maxLength: 2048, description: 'Where the signed webhook goes (https, or http; private addresses only with WEBHOOK_ALLOW_PRIVATE)' },
  threshold: { type: 'number', exclusiveMinimum: 0, maximum: 1, description: "The quarantined share of an event name's events in the window above which it alerts (0.05: 5 %)" },
  minEvents: { type: 'integer', minimum: 1, maximum: 1_000_000, description: 'Events of the name in the window before it may alert' },
  windowSeconds: { type: 'integer', minimum: 60, maximum: 86_400, description: 'The window the share is taken over' },
});

const schemas = {
  put: operationSchema({
    tag, auth, operationId: 'putQuarantineAlert', summary: 'Set the alert on the quarantined share of an event name',
    description:
      "Checked every 15 s: when an event name's (per environment) quarantined share of its events in the window crosses the threshold from below, with at least `minEvents` events, one webhook " +
      '`{"type": "quarantine.share_crossed", org, environment, eventName, windowSeconds, threshold, events, quarantined, accepted, share, topReasons, at}` signed as flow webhooks are (Standard Webhooks, the org\'s webhook secret); ' +
      'once per crossing (the share must fall back first), a failed delivery tried again at the next check. Sent by processes with the flows role.',
    params: slugOnly, body: { ...alert, additionalProperties: false },
    ok: { status: 200, description: 'The alert in force', schema: object({ alert }) },
    errors: [...ORG_DATA, 'invalid_request'],
  }),
  get: operationSchema({
    tag, auth, operationId: 'getQuarantineAlert', summary: "The org's quarantine alert", params: slugOnly,
    ok: { status: 200, description: 'The alert in force', schema: object({ alert }) },
    errors: [...ORG_DATA, 'not_found'],
  }),
  delete: operationSchema({
    tag, auth, operationId: 'deleteQuarantineAlert', summary: "Remove the org's quarantine alert", params: slugOnly,
    ok: { status: 200, description: 'It is gone', schema: object({ deleted: { const: true } }) },
    errors: [...ORG_DATA, 'not_found'],
  }),
};

export function registerAlertRoutes(app: FastifyInstance, deps: { orgs: OrgStore; alerts: QuarantineAlerts; allowPrivate: boolean }): void {
  const path = '/admin/v1/orgs/:slug/alerts/quarantine';
  const none = (org: string) => new AppError('not_found', `org ${org} has no quarantine alert: PUT ${path.replace(':slug', org)} sets one`);
  app.put<{ Params: { slug: string }; Body: QuarantineAlert }>(path, { schema: schemas.put }, async (request) => {
    const org = await deps.orgs.get(request.params.slug);
    const refused = checkWebhookUrl(request.body.url, deps.allowPrivate);
    if (refused) throw new AppError('invalid_request', `url: ${refused}`);
    await deps.alerts.put(org.slug, request.body);
    return { alert: request.body };
  });
  app.get<{ Params: { slug: string } }>(path, { schema: schemas.get }, async (request) => {
    const org = await deps.orgs.get(request.params.slug);
    const found = await deps.alerts.get(org.slug);
    if (!found) throw none(org.slug);
    return { alert: found };
  });
  app.delete<{ Params: { slug: string } }>(path, { schema: schemas.delete }, async (request) => {
    const org = await deps.orgs.get(request.params.slug);
    if (!(await deps.alerts.remove(org.slug))) throw none(org.slug);
    return { deleted: true as const };
  });
}
