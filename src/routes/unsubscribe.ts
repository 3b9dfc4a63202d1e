/**
 * The unsubscribe link of a message (SPEC 8; RFC 8058 one-click): public, no login.
 *   GET  /unsubscribe/:token  a small page naming the topic, with a button that POSTs the one-click body;
 *   POST /unsubscribe/:token  with the body `List-Unsubscribe=One-Click` (form-encoded or multipart, as
 *                             mailbox providers send it): unsubscribes at once, 200.
 * The token (reactions/consent/unsubscribe-link.ts) names the org, the contact and the topic; one that
 * does not open answers 404 and nothing else. GET changes nothing: link scanners in mail systems fetch
 * every link they see.
 */
import type { FastifyInstance } from 'fastify';
import type { OrgStore } from '../control/org-store.js';
import { AppError } from '../core/errors.js';
import type { Context } from '../core/context.js';
import type { Metrics } from '../ops/metrics.js';
import type { ConsentStore } from '../reactions/consent/consent-store.js';
import { MAX_TOKEN_CHARS, type UnsubscribeLinks, type UnsubscribeTarget } from '../reactions/consent/unsubscribe-link.js';
import { operationSchema } from '../openapi/route-schema.js';

const params = {
  type: 'object',
  required: ['token'],
  properties: { token: { type: 'string', maxLength: MAX_TOKEN_CHARS, description: 'The token of the link in the message' } },
} as const;
const CSP = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";
/** The one-click body, form-encoded (`List-Unsubscribe=One-Click`) or as a multipart field. */
const ONE_CLICK = /(^|&)List-Unsubscribe=One-Click(&|$)|name="List-Unsubscribe"\r?\n\r?\nOne-Click\r?\n/;

const schemas = {
  page: operationSchema({
    tag: 'Operations', auth: 'none', operationId: 'unsubscribePage', summary: 'The unsubscribe page of a message link',
    description: 'Shows the topic and a button; changes nothing by itself (mail scanners fetch links). A link that is not valid answers 404: an HTML page when the request accepts text/html, else problem+json.', params,
    ok: { status: 200, description: 'HTML', contentType: 'text/html' },
    errors: ['unsubscribe_link_invalid', 'storage_unavailable', 'org_unavailable'],
  }),
  unsubscribe: operationSchema({
    tag: 'Operations', auth: 'none', operationId: 'unsubscribeOneClick', summary: 'One-click unsubscribe (RFC 8058)',
    description: 'The body `List-Unsubscribe=One-Click`, form-encoded or multipart, as mail clients send it. Unsubscribes the contact of the link from its topic at once.',
    params,
    consumes: ['application/x-www-form-urlencoded', 'multipart/form-data'],
    ok: { status: 200, description: 'HTML: the contact is unsubscribed', contentType: 'text/html' },
    errors: ['unsubscribe_link_invalid', 'invalid_request', 'payload_too_large', 'storage_unavailable', 'org_unavailable'],
  }),
};

export function registerUnsubscribeRoutes(app: FastifyInstance, deps: { orgs: OrgStore; owns(org: string): boolean; consent: ConsentStore; links: UnsubscribeLinks; ctx: Context; metrics: Metrics }): void {
  /** What the token names, when it opens and its org is one this process keeps. */
  const target = (token: string): UnsubscribeTarget | undefined => {
    const opened = deps.links.open(token);
    return opened && deps.orgs.cached(opened.org) && deps.owns(opened.org) ? opened : undefined;
  };
  const invalid = () => new AppError('unsubscribe_link_invalid', 'This is not a valid unsubscribe link: use the link from the message as it arrived.');
  // Every org has `all` (ConsentStore.topics), so only a topic deleted since the message lacks a name.
  const topicName = async (t: UnsubscribeTarget) => (await deps.consent.topic(t.org, t.topic))?.name ?? t.topic;

  app.register(async (scope) => {
    scope.addContentTypeParser(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'], { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) => done(null, body));

    scope.get<{ Params: { token: string } }>('/unsubscribe/:token', { schema: schemas.page }, async (request, reply) => {
      const t = target(request.params.token);
      if (!t) {
        // A person who opened a broken link gets a page; a program, the problem+json.
        if (!/text\/html/.test(request.headers.accept ?? '')) throw invalid();
        return page(reply.code(404), 'Not a valid link', '<p>This unsubscribe link is not valid. Use the link from the message as it arrived.</p>');
      }
      const name = await topicName(t);
      return page(reply, 'Unsubscribe', `<p>Stop receiving <b>${html(name)}</b> at ${html(masked(t.email))}?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`);
    });

    scope.post<{ Params: { token: string }; Body: unknown }>('/unsubscribe/:token', { schema: schemas.unsubscribe }, async (request, reply) => {
      const t = target(request.params.token);
      if (!t) throw invalid();
      if (typeof request.body !== 'string' || !ONE_CLICK.test(request.body)) {
        throw new AppError('invalid_request', 'The body must be List-Unsubscribe=One-Click (RFC 8058), form-encoded or multipart.');
      }
      await deps.consent.setConsent(t.org, { email: t.email, topic: t.topic, status: 'unsubscribed', source: 'link', at: deps.ctx.clock.now() });
      deps.metrics.consentChanges.inc({ source: 'link', status: 'unsubscribed' });
      return page(reply, 'Unsubscribed', `<p>${html(masked(t.email))} will not receive <b>${html(await topicName(t))}</b> any more.</p>`);
    });
  });
}

function page(reply: import('fastify').FastifyReply, title: string, body: string) {
  return reply
    .type('text/html; charset=utf-8')
    .header('Content-Security-Policy', CSP)
    .header('Cache-Control', 'no-store')
    .header('Referrer-Policy', 'no-referrer')
    .send(`<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><meta name="robots" content="noindex">
<title>${title}</title><style>body{font:16px system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem}button{font:inherit;padding:.5rem 1rem}</style></head>
<body><h1>${title}</h1>${body}</body></html>`);
}

/** a***@example.com: enough for the person to recognise, little for anyone the link reaches. */
function masked(email: string): string {
  const at = email.lastIndexOf('@');
  return at <= 0 ? '***' : `${email[0]}***${email.slice(at)}`;
}

function html(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
