/**
 * Generated values at every length and character the service accepts (fast-check), biased to the longest:
 * org slugs (`^[a-z][a-z0-9_]{1,39}$`), topics and trigger names (`^[a-z][a-z0-9_]{0,63}$`), flow ids
 * (`^[A-Za-z0-9_-]{1,64}$`) and e-mail addresses up to 320 characters in the schemas' `email` format (every
 * character it allows in a local part: plus-tags, dots, digits, the specials of RFC 5322 atext, mixed case).
 */
import fc from 'fast-check';

const LOWER = 'abcdefghijklmnopqrstuvwxyz';
const DIGITS = '0123456789';
const UPPER = LOWER.toUpperCase();

/** A length from `min` to `max`, the longest one time in three. */
const lengthUpTo = (min: number, max: number) => fc.oneof({ arbitrary: fc.constant(max), weight: 1 }, { arbitrary: fc.integer({ min, max }), weight: 2 });

/** `^[first][rest]{min-1,max-1}$`, its length biased to `max`. */
function word(first: string, rest: string, min: number, max: number): fc.Arbitrary<string> {
  return lengthUpTo(min, max).chain((n) =>
    fc.tuple(fc.constantFrom(...first), fc.array(fc.constantFrom(...rest), { minLength: n - 1, maxLength: n - 1 })).map(([a, b]) => a + b.join('')),
  );
}

export const orgSlug = () => word(LOWER, `${LOWER}${DIGITS}_`, 2, 40);
/** A topic, and a trigger or segment name: the same pattern. */
export const topicName = () => word(LOWER, `${LOWER}${DIGITS}_`, 1, 64);
export const flowId = () => word(`${LOWER}${UPPER}${DIGITS}_-`, `${LOWER}${UPPER}${DIGITS}_-`, 1, 64);

/** Characters of a local part's atom (RFC 5322 atext; the `email` format's set), letters and digits most often. */
const ATEXT = fc.oneof(
  { arbitrary: fc.constantFrom(...`${LOWER}${UPPER}${DIGITS}`), weight: 8 },
  { arbitrary: fc.constantFrom(...'+.-_'), weight: 2 },
  { arbitrary: fc.constantFrom(...`!#$%&'*/=?^\`{|}~`), weight: 1 },
);
const LABEL_CHAR = fc.constantFrom(...`${LOWER}${UPPER}${DIGITS}`);

/**
 * A local part of 1..64 characters: atoms from ATEXT joined by single dots (none first or last), often a
 * `+tag`. Built from generated characters, then repaired so that dots never touch.
 */
const localPart = lengthUpTo(1, 64).chain((n) =>
  fc.array(ATEXT, { minLength: n, maxLength: n }).map((cs) => {
    const s = cs.map((c, i) => (c === '.' && (i === 0 || i === n - 1 || cs[i - 1] === '.') ? 'x' : c));
    return s.join('');
  }),
);

/**
 * A domain of exactly `length` characters (at least 4): labels of 1..63 letters and digits (a hyphen
 * inside some), dot-separated, ending in a 2..6-letter top-level label.
 */
function domainOf(length: number): fc.Arbitrary<string> {
  return fc.tuple(fc.integer({ min: 2, max: Math.min(6, length - 2) }), fc.array(LABEL_CHAR, { minLength: length, maxLength: length }), fc.boolean()).map(([tldLength, chars, hyphens]) => {
    const tld = chars.slice(0, tldLength).map((c) => (/[0-9]/.test(c) ? 'q' : c)).join('');
    let rest = length - tldLength; // labels and their dots
    const labels: string[] = [];
    let at = tldLength;
    while (rest > 0) {
      let chunk = Math.min(64, rest); // a label of up to 63 and its dot
      if (rest - chunk === 1) chunk -= 1;
      const label = chars.slice(at, at + chunk - 1);
      if (hyphens && label.length > 2) label[1] = '-';
      labels.push(label.join(''));
      at += chunk - 1;
      rest -= chunk;
    }
    return `${labels.join('.')}.${tld}`;
  });
}

/**
 * An address: realistic lengths (up to 40), 254 (the longest SMTP carries) and 320 (the longest the
 * schemas accept) each one time in four, any length between otherwise.
 */
export const emailAddress = () =>
  fc
    .oneof(fc.integer({ min: 8, max: 40 }), fc.constant(254), fc.constant(320), fc.integer({ min: 41, max: 320 }))
    .chain((total) => localPart.chain((local) => domainOf(Math.max(4, total - local.length - 1)).map((domain) => `${local}@${domain}`)));

/** The address in another mix of upper and lower case (the contact key is the lower-cased address). */
export const recased = (address: string) =>
  fc.array(fc.boolean(), { minLength: address.length, maxLength: address.length }).map((up) => [...address].map((c, i) => (up[i] ? c.toUpperCase() : c.toLowerCase())).join(''));
