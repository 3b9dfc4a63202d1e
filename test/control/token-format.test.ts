/** Audience API token format (SPEC 3): prefix, shape, CRC32 checksum, uniqueness. */
import t from 'tap';
import { crc32 } from 'node:zlib';
import { createContext } from '../../src/core/context.js';
import { TOKEN_LENGTH, TOKEN_PATTERN, hasValidChecksum, issueToken } from '../../src/control/token-format.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const ctx = createContext();

t.test('aud_ + 30 random base62 + 6-character base62 CRC32 of the random part', async (t) => {
  const token = issueToken(ctx);
  t.match(token, /^aud_[0-9A-Za-z]{36}$/);
  t.equal(token.length, 40);
  t.equal(TOKEN_LENGTH, 40);
  t.ok(TOKEN_PATTERN.test(token));
  t.ok(hasValidChecksum(token));

  // Independent decoding of the checksum: big-endian base62.
  const random = token.slice(4, 34);
  const decoded = [...token.slice(34)].reduce((n, ch) => n * 62 + BASE62.indexOf(ch), 0);
  t.equal(decoded, crc32(random), 'checksum is CRC32 of the random part');
});

t.test('the checksum catches every single-character substitution', async (t) => {
  const token = issueToken(ctx);
  let tried = 0;
  let caught = 0;
  for (let i = 0; i < token.length; i++) {
    for (const ch of BASE62 + '_-') {
      if (ch === token[i]) continue;
      tried++;
      if (!hasValidChecksum(token.slice(0, i) + ch + token.slice(i + 1))) caught++;
    }
  }
  t.equal(caught, tried, `all ${tried} substitutions refused`);
});

t.test('prefix, length and charset are checked', async (t) => {
  const token = issueToken(ctx);
  for (const bad of ['', 'aud_', token.slice(0, -1), token + 'x', 'AUD_' + token.slice(4), 'tok_' + token.slice(4), token.replace(/.$/, '=')]) {
    t.notOk(hasValidChecksum(bad), JSON.stringify(bad));
  }
  t.notOk(hasValidChecksum(undefined as unknown as string), 'not a string');
});

t.test('1000 issued tokens are unique', async (t) => {
  const tokens = new Set(Array.from({ length: 1000 }, () => issueToken(ctx)));
  t.equal(tokens.size, 1000);
  t.ok([...tokens].every(hasValidChecksum));
});

t.test('randomness comes from the context', async (t) => {
  const zeros = createContext({ randomBytes: (n) => Buffer.alloc(n) });
  t.equal(issueToken(zeros), issueToken(zeros), 'deterministic with a fixed source');
  t.match(issueToken(zeros), /^aud_0{30}/);
});
