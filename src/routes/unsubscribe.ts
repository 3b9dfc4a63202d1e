/**
 * The unsubscribe link of a message (SPEC 8; RFC 8058 one-click): public, no login.
 *   GET  /unsubscribe/:token  a small page naming the topic, with a button that POSTs the one-click body;
 *   POST /unsubscribe/:token  with the body `List-Unsubscribe=One-Click` (form-encoded or multipart, as
 *                             mailbox providers send it): unsubscribes at once, 200.
 * The token (reactions/consent/unsubscribe-link.ts) names the org, the contact and the topic; one that
 * does not open answers 404 and nothing else. GET changes nothing: link scanners in mail systems fetch
 * every link they see. The link of a contact erased with suppress since answers as any other (the
 * person asked not to be messaged, and is not) and records nothing: the address is not stored again.
 *
 * In the cluster layout a link can reach any process: one that does not keep the link's org (an `api`
 * process, or another shard) opens the token only to read its org, and relays the request to the shard
 * that keeps it (cluster/relay-to-shard.ts), which opens it again and answers; its answer comes back
 * unchanged. This needs the same WEBHOOK_SIGNING_KEY on every process (the tokens' key derives from it).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { ShardRelay } from '../cluster/relay-to-shard.js';
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
    errors: ['unsubscribe_link_invalid', 'storage_unavailable', 'org_unavailable', 'shard_unavailable'],
  }),
  unsubscribe: operationSchema({
    tag: 'Operations', auth: 'none', operationId: 'unsubscribeOneClick', summary: 'One-click unsubscribe (RFC 8058)',
    description:
      'The body `List-Unsubscribe=One-Click`, form-encoded or multipart, as mail clients send it. Unsubscribes the contact of the link from its topic at once. ' +
      'For a contact erased with `suppress` since, the same 200 page, and nothing is recorded (it is never messaged again).',
    params,
    consumes: ['application/x-www-form-urlencoded', 'multipart/form-data'],
    ok: { status: 200, description: 'HTML: the contact is unsubscribed', contentType: 'text/html' },
    errors: ['unsubscribe_link_invalid', 'invalid_request', 'payload_too_large', 'storage_unavailable', 'org_unavailable', 'shard_unavailable'],
  }),
};

export interface UnsubscribeDeps {
  orgs: OrgStore;
  links: Pick<UnsubscribeLinks, 'open'>;
  ctx: Context;
  metrics: Metrics;
  /** The orgs this process keeps and their consent; absent on an `api` process without org databases. */
  local?: { owns(org: string): boolean; consent: ConsentStore };
  /** NATS mode: the shard that keeps an org this process does not answers its links. */
  relay?: ShardRelay;
}

/** What a link names, and who answers it: this process with the org's consent, or the org's shard. */
type Found = { t: UnsubscribeTarget; consent: ConsentStore; relay?: never } | { t: UnsubscribeTarget; relay: ShardRelay };

export function registerUnsubscribeRoutes(app: FastifyInstance, deps: UnsubscribeDeps): void {
  const { local, relay } = deps;
  /** undefined when the token does not open, its org does not exist, or no process this one reaches keeps it. */
  const target = (token: string): Found | undefined => {
    const t = deps.links.open(token);
    if (!t || !deps.orgs.cached(t.org)) return undefined;
    if (local?.owns(t.org)) return { t, consent: local.consent };
    return relay ? { t, relay } : undefined;
  };
  const invalid = () => new AppError('unsubscribe_link_invalid', 'This is not a valid unsubscribe link: use the link from the message as it arrived.');
  // The link's holder may not know which org sent it: problems do not name it.
  const relayed = (found: { t: UnsubscribeTarget; relay: ShardRelay }, request: FastifyRequest, reply: FastifyReply, body: string) =>
    found.relay.send(request, reply, { slug: found.t.org, body: Buffer.from(body), org: "this link's org" });

  app.register(async (scope) => {
    scope.addContentTypeParser(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain'], { parseAs: 'string', bodyLimit: 4096 }, (_request, body, done) => done(null, body));

    scope.get<{ Params: { token: string } }>('/unsubscribe/:token', { schema: schemas.page }, async (request, reply) => {
      const found = target(request.params.token);
      if (!found) {
        // A person who opened a broken link gets a page; a program, the problem+json.
        if (!/text\/html/.test(request.headers.accept ?? '')) throw invalid();
        return page(reply.code(404), 'Not a valid link', '<p>This unsubscribe link is not valid. Use the link from the message as it arrived.</p>');
      }
      if (found.relay) return relayed(found, request, reply, '');
      const { t, consent } = found;
      const name = await topicName(consent, t);
      return page(reply, 'Unsubscribe', `<p>Stop receiving <b>${html(name)}</b> at ${html(masked(t.email))}?</p>
<form method="post"><input type="hidden" name="List-Unsubscribe" value="One-Click"><button type="submit">Unsubscribe</button></form>`);
    });

    scope.post<{ Params: { token: string }; Body: unknown }>('/unsubscribe/:token', { schema: schemas.unsubscribe }, async (request, reply) => {
      const found = target(request.params.token);
      if (!found) throw invalid();
      if (typeof request.body !== 'string' || !ONE_CLICK.test(request.body)) {
        throw new AppError('invalid_request', 'The body must be List-Unsubscribe=One-Click (RFC 8058), form-encoded or multipart.');
      }
      // The body is read and bounded (4096 bytes) by the parser above before anything is relayed.
      if (found.relay) return relayed(found, request, reply, request.body);
      const { t, consent } = found;
      const written = await consent.setConsent(t.org, { email: t.email, topic: t.topic, status: 'unsubscribed', source: 'link', at: deps.ctx.clock.now() });
      if (written === 'recorded') deps.metrics.consentChanges.inc({ source: 'link', status: 'unsubscribed' });
      return page(reply, 'Unsubscribed', `<p>${html(masked(t.email))} will not receive <b>${html(await topicName(consent, t))}</b> any more.</p>`);
    });
  });
}

/** Every org has `all` (ConsentStore.topics), so only a topic deleted since the message lacks a name. */
async function topicName(consent: ConsentStore, t: UnsubscribeTarget): Promise<string> {
  return (await consent.topic(t.org, t.topic))?.name ?? t.topic;
}

function page(reply: FastifyReply, title: string, body: string) {
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
