/**
 * GET /v1/projects/{writeKey}/settings: what analytics.js loads in place of Segment's CDN, naming this
 * service as the only destination (`apiHost` and `protocol`: analytics.js sends to `protocol://apiHost/t`).
 *
 * The collector named is PUBLIC_URL's, or else the address and port the connection reached — never a
 * request header. Host, X-Forwarded-Host, X-Forwarded-Proto and Forwarded are the client's to write;
 * reflected into apiHost, one request through a cache in front of the service would hand every site's
 * analytics.js a collector of the attacker's choosing (issue 37). Without PUBLIC_URL the answer depends on
 * the connection (each listening address, and in tests none), so it is marked `no-store`; behind a proxy
 * that address is an internal one, which is why docs/partners.md asks for PUBLIC_URL there.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';

export interface CollectorUrls {
  /** PUBLIC_URL, when set. */
  publicUrl: string | undefined;
  /** `http://HOST:PORT` from the config: for a request with no socket address (inject). */
  listenUrl: string;
}

/** Where analytics.js is to send, and whether every client gets the same answer. */
function collectorBase(request: FastifyRequest, urls: CollectorUrls): { protocol: string; apiHost: string; shared: boolean } {
  if (urls.publicUrl !== undefined) return { ...fromUrl(urls.publicUrl), shared: true };
  const { localAddress, localPort } = request.socket;
  if (localAddress === undefined || localPort === undefined) return { ...fromUrl(urls.listenUrl), shared: false };
  const address = ipaddr.isValid(localAddress) ? ipaddr.process(localAddress) : undefined;
  const host = address?.kind() === 'ipv6' ? `[${address.toString()}]` : (address?.toString() ?? localAddress);
  return { protocol: 'http', apiHost: `${host}:${localPort}/v1`, shared: false };
}

/** `https://a.example/audience/` → protocol `https`, apiHost `a.example/audience/v1`. */
function fromUrl(url: string): { protocol: string; apiHost: string } {
  const parsed = new URL(url);
  return { protocol: parsed.protocol.replace(/:$/, ''), apiHost: `${parsed.host}${parsed.pathname.replace(/\/+$/, '')}/v1` };
}

/**
 * Where analytics.js loads its settings and chunks from (its "CDN"): the collector's origin and path,
 * `https://audience.example.com/audience` for PUBLIC_URL `https://audience.example.com/audience/`.
 */
export function analyticsJsBase(request: FastifyRequest, urls: CollectorUrls): { base: string; shared: boolean } {
  const { protocol, apiHost, shared } = collectorBase(request, urls);
  return { base: `${protocol}://${apiHost.replace(/\/v1$/, '')}`, shared };
}

export function analyticsJsSettings(request: FastifyRequest, reply: FastifyReply, writeKey: string, urls: CollectorUrls): Record<string, unknown> {
  const { protocol, apiHost, shared } = collectorBase(request, urls);
  if (!shared) void reply.header('Cache-Control', 'no-store');
  return {
    integrations: { 'Segment.io': { apiKey: writeKey, apiHost, protocol, unbundledIntegrations: [], addBundledMetadata: false } },
    plan: { track: { __default: { enabled: true, integrations: {} } }, identify: { __default: { enabled: true } }, group: { __default: { enabled: true } } },
    edgeFunction: {},
    analyticsNextEnabled: true,
    middlewareSettings: {},
    enabledMiddleware: {},
    metrics: { sampleRate: 0 },
    legacyVideoPluginsEnabled: false,
    remotePlugins: [],
  };
}
