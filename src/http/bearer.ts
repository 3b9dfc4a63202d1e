/** The credentials of `Authorization: Bearer <token>`, shared by the Audience API and the admin API. */

/** RFC 7235 2.1: the auth-scheme is case-insensitive, and one or more spaces separate it from the token. */
const BEARER = /^bearer(?:[ \t]+(.*))?$/i;

/** The token after the Bearer scheme (trimmed), or undefined for no header, another scheme or no token. */
export function bearerToken(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const token = BEARER.exec(header.trim())?.[1]?.trim();
  return token === '' ? undefined : token;
}
