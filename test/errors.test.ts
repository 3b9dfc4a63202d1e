/** Every error code is unique, snake_case, has a sane status, and is documented in the README. */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { errorCatalog } from '../src/errors.js';
import { projectRoot } from '../src/paths.js';

const readme = readFileSync(join(projectRoot, 'README.md'), 'utf8');

for (const [code, entry] of Object.entries(errorCatalog)) {
  t.match(code, /^[a-z]+(_[a-z]+)*$/, `${code} is snake_case`);
  t.ok(entry.status >= 400 && entry.status < 600, `${code} has an error status`);
  t.ok(readme.includes(`\`${code}\``), `${code} is documented in the README`);
}
t.equal(new Set(Object.keys(errorCatalog)).size, Object.keys(errorCatalog).length);
