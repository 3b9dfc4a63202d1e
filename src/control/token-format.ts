/**
 * Audience API token format (SPEC 3): `aud_` + 30 random base62 characters + a 6-character base62
 * CRC32 of the random part. The fixed prefix and shape let secret scanners recognise a leaked token
 * (TOKEN_PATTERN); the checksum lets a typo or a made-up token be refused before any lookup.
 * The token carries ~178 bits of randomness (30 × log2 62), so a fast SHA-256 is enough to store it.
 */
import { crc32 } from 'node:zlib';
import type { Context } from '../core/context.js';
import { BASE62, randomBase62 } from '../core/secrets.js';

export const TOKEN_PREFIX = 'aud_';
const RANDOM_LENGTH = 30;
// 62^6 ≈ 5.7e10 > 2^32, so every CRC32 value has a 6-character encoding.
const CHECKSUM_LENGTH = 6;
export const TOKEN_LENGTH = TOKEN_PREFIX.length + RANDOM_LENGTH + CHECKSUM_LENGTH;

/** What a secret scanner (or a log redactor) should look for. */
export const TOKEN_PATTERN = /^aud_[0-9A-Za-z]{36}$/;

/** Fixed-width big-endian base62, left-padded with '0': one string per value, so string equality is enough. */
function base62Fixed(value: number, width: number): string {
  let out = '';
  for (let rest = value; out.length < width; rest = Math.floor(rest / 62)) out = BASE62[rest % 62] + out;
  return out;
}

function checksumOf(random: string): string {
  return base62Fixed(crc32(random), CHECKSUM_LENGTH);
}

/** A fresh token. Show it once; store only its SHA-256. */
export function issueToken(ctx: Pick<Context, 'randomBytes'>): string {
  const random = randomBase62(ctx, RANDOM_LENGTH);
  return TOKEN_PREFIX + random + checksumOf(random);
}

/**
 * Prefix, length, charset and checksum. CRC32 detects every error burst up to 32 bits, so any single
 * changed character of the random part is caught; a changed checksum character changes the encoded value.
 */
export function hasValidChecksum(token: string): boolean {
  if (typeof token !== 'string' || token.length !== TOKEN_LENGTH || !TOKEN_PATTERN.test(token)) return false;
  const random = token.slice(TOKEN_PREFIX.length, TOKEN_PREFIX.length + RANDOM_LENGTH);
  return token.slice(-CHECKSUM_LENGTH) === checksumOf(random);
}
