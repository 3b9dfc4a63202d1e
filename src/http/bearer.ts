/** The credentials of `Authorization: Bearer <token>` (the Audience API, the admin API) and `Basic` (partners, write keys). */

/** RFC 7235 2.1: the auth-scheme is case-insensitive, and one or more spaces separate it from the token. */
const BEARER = /^bearer(?:[ \t]+(.*))?$/i;

/** The token after the Bearer scheme (trimmed), or undefined for no header, another scheme or no token. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const token = BEARER.exec(header.trim())?.[1]?.trim();
  return token === '' ? undefined : token;
}

/** The user name and password of `Authorization: Basic <base64>`, or undefined for no header or another scheme. */
export function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  if (typeof header !== 'string' || !/^basic\s/i.test(header)) return undefined;
  const decoded = Buffer.from(header.slice(6).trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? { user: decoded, password: '' } : { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
