/**
 * docs/operations/logs.md lists every message the service logs at info or above: each literal message of a
 * logger call in src/ (a template's `${…}` parts match anything) must appear in it, and the lifecycle lines
 * the admin API writes are all there.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ROOT } from '../helpers/entry.js';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'console' || entry.name === 'generated' ? [] : sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** `logger.warn({ … }, 'message')`, `log.info('message')`, `this.options.logger.error({ … }, \`… ${x} …\`)`. */
const CALL = /\b(?:log|logger)\.(?:info|warn|error|fatal)\(\s*(?:\{[^;]*?\}\s*,\s*|\w+\s*,\s*)?(['`])((?:(?!\1)[^\\]|\\.)+)\1\s*\)/gs;
/** The lifecycle table's messages: `createOrg: 'org created',`. */
const LIFECYCLE = /^\s+\w+: '([^']+)',$/gm;
/** The probes' lines (routes/ops.ts): `failed: '…'`, `cleared: '…'`. */
const PROBES = /\b(?:failed|cleared): '([^']+)'/g;

const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const pattern = (message: string) => new RegExp(message.split(/\$\{[^}]*\}/).map(escape).join('.+?'));

t.test('every logged message is in docs/operations/logs.md', async (t) => {
  const doc = readFileSync(join(ROOT, 'docs', 'operations', 'logs.md'), 'utf8');
  const messages = new Set<string>();
  for (const file of sources(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const match of text.matchAll(CALL)) messages.add(match[2]!);
    if (file.endsWith('lifecycle-log.ts')) for (const match of text.matchAll(LIFECYCLE)) messages.add(match[1]!);
    if (file.endsWith('routes/ops.ts')) for (const match of text.matchAll(PROBES)) messages.add(match[1]!);
  }
  t.ok(messages.size > 60, `${messages.size} messages found in src/`);
  const missing = [...messages].filter((message) => !pattern(message).test(doc)).sort();
  t.same(missing, [], 'each one is documented');
});
