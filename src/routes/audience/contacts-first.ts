/**
 * GET /audience/v2/contacts answered before Fastify's generic work when it is the common case (issue
 * 39, design 3): a known contact asked with `identity` (and perhaps `fields`) by a token that may use
 * the API, within the org's budget. Everything else — a failed check of any kind, `after` or `wait`, a
 * parameter given twice or unknown here, a body, a limiter that says no, the server closing — is handed
 * to the Fastify route (contacts.ts, behind audienceAuth), which answers it as it always has. Nothing
 * is charged or written before the answer is certain, so handing over has no side effect but a token's
 * last use noted a few microseconds early.
 *
 * What it answers is what the route answers: the same checks in the same functions (permittedOrg,
 * findContact, selectFields, answerText), the same headers (lower-case, as Fastify writes them), the
 * same metrics (the request-duration series and the lookups counter). test/routes/audience/
 * contacts-first.test.ts holds it to that against inject(), which always takes the Fastify route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { parse as parseQuery } from 'fast-querystring';
import type { FastifyInstance } from 'fastify';
import { acceptsJson } from '../../http/accepts-json.js';
import { generateRequestId } from '../../http/request-id.js';
import { remainingHeader } from '../../ratelimit/headers.js';
import { ORG_POLICY_NAME } from '../../ratelimit/policies.js';
import type { RateDecision } from '../../ratelimit/types.js';
import { type AudienceAuthDeps, budgetOf, type OrgBudget, permittedOrg } from './auth.js';
import { ANSWER_TYPE, answerText, CONTACTS_ROUTE, type ContactsRouteDeps, findContact, selectFields } from './contacts.js';
import { metaTail } from './fresh.js';

/** A handler that either answers the request (true) or leaves it untouched for Fastify (false). */
export type FirstAnswer = (request: IncomingMessage, response: ServerResponse) => boolean;
/** Fastify's own handler of the server's requests. */
type Handler = (request: IncomingMessage, response: ServerResponse) => void;

const PREFIX = `${CONTACTS_ROUTE}?`;

/** `fastify`: where a request goes that turns out not to be answered here after all (a Redis limiter's denial). */
export function contactsFirst(deps: ContactsRouteDeps & Pick<AudienceAuthDeps, 'tokens' | 'orgs' | 'orgLimiter'>, fastify: Handler): FirstAnswer {
  const { ctx, profiles, freshness, metrics } = deps;
  // The series the route's hooks would count this answer in (operator-metrics.ts, contacts.ts).
  const seconds = metrics.httpRequestSeconds.labels('GET', CONTACTS_ROUTE, '200');
  const answered = metrics.lookups.labels('200');

  const answer = (response: ServerResponse, started: number, request: IncomingMessage, budget: OrgBudget, decision: RateDecision, text: string): void => {
    response.writeHead(200, {
      'request-id': generateRequestId(request),
      'ratelimit-policy': budget.policyHeader,
      ratelimit: remainingHeader(ORG_POLICY_NAME, decision),
      'content-type': ANSWER_TYPE,
      'content-length': Buffer.byteLength(text),
    });
    response.end(text);
    answered.inc();
    seconds.observe((performance.now() - started) / 1000);
  };

  return (request, response) => {
    const url = request.url;
    if (request.method !== 'GET' || url === undefined || !url.startsWith(PREFIX)) return false;
    const headers = request.headers;
    if (headers['content-length'] !== undefined || headers['transfer-encoding'] !== undefined || !acceptsJson(headers.accept)) return false;
    const started = performance.now();
    const now = ctx.clock.now();
    const org = permittedOrg(deps, headers.authorization, now, request.socket);
    if (!org) return false;
    const asked = askedFor(url.slice(PREFIX.length), org.contentFields);
    if (!asked) return false;
    const contact = findContact(profiles.finder(org.slug), asked.identity);
    if (!contact) return false;
    const budget = budgetOf(org);
    const text = answerText(contact, asked.fields, metaTail(now, freshness.lagMs(org.slug)));
    const decision = deps.orgLimiter.consume(budget.key, budget.policy, now, 1);
    if (!(decision instanceof Promise)) {
      if (!decision.allowed) return false;
      answer(response, started, request, budget, decision, text);
      return true;
    }
    // A limiter that asks Redis: the answer waits for it; a denial or a failure goes to the route.
    decision.then(
      (settled) => (settled.allowed ? answer(response, started, request, budget, settled, text) : fastify(request, response)),
      () => fastify(request, response),
    );
    return true;
  };
}

/** `identity` once and at most `fields` once, nothing else; undefined for any other query (the route answers it). */
function askedFor(query: string, contentFields: string[]): { identity: string; fields: string[] } | undefined {
  const params = parseQuery(query) as Record<string, unknown>;
  let identity: unknown;
  let fields: unknown;
  for (const key in params) {
    if (key === 'identity') identity = params[key];
    else if (key === 'fields') fields = params[key];
    else return undefined;
  }
  if (typeof identity !== 'string' || (fields !== undefined && typeof fields !== 'string')) return undefined;
  try {
    return { identity, fields: selectFields(contentFields, fields) };
  } catch {
    return undefined; // invalid_fields: the route says which
  }
}

/**
 * Puts `first` ahead of Fastify on the app's HTTP server, once it is ready: what `first` declines goes
 * to Fastify's own handler as before. From the moment the app starts closing, everything goes to Fastify
 * (which answers 503 while it closes).
 */
export function answerFirst(app: FastifyInstance, make: (fastify: Handler) => FirstAnswer): void {
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onReady', (done) => {
    const server = app.server;
    const [fastify, ...others] = server.listeners('request') as Handler[];
    // Not the server Fastify made (a test's own, or another listener beside it): left as it is.
    if (!fastify || others.length > 0) return done();
    const first = make(fastify);
    server.removeListener('request', fastify);
    server.on('request', (request: IncomingMessage, response: ServerResponse) => {
      let taken = false;
      try {
        taken = !closing && first(request, response);
      } catch (err) {
        // A bug of the first answer must not end the process: the route answers, unless something was sent.
        app.log.error({ err }, 'answering a request before Fastify failed');
        taken = response.headersSent;
        if (taken) response.destroy();
      }
      if (!taken) fastify(request, response);
    });
    done();
  });
}
