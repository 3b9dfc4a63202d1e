/**
 * An accepted batch is stored as it arrived (issue 39, design 5): its text, with the partner's secret cut
 * out, is written once for all its members, and each member's body is made from it when the log record is
 * read (record-codec.ts), the same text the collector would have stored. On the bench's batch of 100,
 * serializing each member and encoding those bodies took ~420 of the collector's ~1,100 µs per batch.
 *
 * The cut is made only where it is exact: no `\u` escape anywhere in the text (so no key or secret can be
 * written another way), no writeKey, a secret without characters JSON escapes that occurs exactly once in
 * the text, as the string right after `"partnerSecret":`. That one occurrence is then the envelope's own
 * secret (the parsed body holds it, and it can be written only one way), and no other value holds it.
 * Any other batch is stored member by member.
 */
import { takeJsonText } from '../../http/json-body.js';
import type { Body } from './to-log-entry.js';

const SECRET_KEY = '"partnerSecret":"';
/** Characters JSON.stringify writes escaped: a secret with one could also be written another way. */
const ESCAPED = /["\\/\u0000-\u001f\u2028\u2029\ud800-\udfff]/;

/**
 * The bytes of the parsed batch `body`'s text with its secret cut out, or undefined when that cannot be done
 * exactly. Bytes, off V8's heap: the text kept until its record is written was copied by every scavenge.
 */
export function batchTextWithoutSecret(body: Body): Buffer | undefined {
  const text = takeJsonText(body);
  const secret = body.partnerSecret;
  if (text === undefined || typeof secret !== 'string' || 'writeKey' in body || ESCAPED.test(secret) || text.includes('\\u')) return undefined;
  const at = text.indexOf(secret);
  if (at < 0 || text.indexOf(secret, at + 1) >= 0 || !text.startsWith(SECRET_KEY, at - SECRET_KEY.length) || text[at + secret.length] !== '"') return undefined;
  return Buffer.from(text.slice(0, at) + text.slice(at + secret.length));
}

/** The longest text JSON.stringify gives a number (`-0.0000012345678901234567` is 25). */
const NUMBER_TEXT = 32;

/**
 * True when the stored body of `event` with `messageId` (to-log-entry.ts, storedBody) is certainly at most
 * `limit` characters, without serializing it: each character of a string counted as escaped (at most 6),
 * each number as the longest number text. A member of a usual size passes; one near the limit is serialized.
 */
export function storedLengthAtMost(event: Body, messageId: string, limit: number): boolean {
  const messageIdBound = 16 + 6 * messageId.length;
  return lengthBound(event, limit - messageIdBound) <= limit - messageIdBound;
}

/** A bound on JSON.stringify(value).length; stops counting once over `budget`. Depth is bounded by the parser (json-body.ts). */
function lengthBound(value: unknown, budget: number): number {
  switch (typeof value) {
    case 'string':
      return 2 + 6 * value.length;
    case 'number':
      return NUMBER_TEXT;
    case 'boolean':
      return 5;
    case 'object': {
      if (value === null) return 4;
      let total = 2;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length && total <= budget; i++) total += 1 + lengthBound(value[i], budget - total);
      } else {
        for (const key in value) {
          total += 4 + 6 * key.length + lengthBound((value as Body)[key], budget - total);
          if (total > budget) break;
        }
      }
      return total;
    }
    default:
      return 0;
  }
}
