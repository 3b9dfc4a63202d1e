/**
 * A clean install on every Node line package.json supports (issue 28, part 4): no package in the lockfile
 * asks for a Node the project does not run on (npm's EBADENGINE warnings), and no install script runs that
 * package.json has not approved — @scarf/scarf's, which reports installs to a third party, is denied.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import t from 'tap';
import { ROOT } from '../helpers/entry.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
  engines: { node: string };
  allowScripts?: Record<string, boolean>;
  scarfSettings?: { enabled?: boolean };
};
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as {
  packages: Record<string, { version?: string; engines?: { node?: string } | string[]; hasInstallScript?: boolean; dev?: boolean }>;
};

/** The lowest version of each line the project supports, e.g. 20.19.0 and 22.13.0. */
const LINES = pkg.engines.node.split('||').map((range) => semver.minVersion(range.trim())!.version);

t.test('every package in the lockfile runs on the lowest version of each supported Node line', async (t) => {
  t.same(LINES, ['20.19.0', '22.13.0'], 'the lines package.json supports');
  const refused: string[] = [];
  for (const [path, entry] of Object.entries(lock.packages)) {
    const node = !entry.engines || Array.isArray(entry.engines) ? undefined : entry.engines.node;
    if (!node || path === '') continue;
    for (const version of LINES) {
      if (!semver.satisfies(version, node)) refused.push(`${path.replace(/^.*node_modules\//, '')}@${entry.version} wants node ${node}, not ${version}`);
    }
  }
  t.same(refused, [], 'no EBADENGINE at install');
});

t.test('install scripts: each one approved or denied in package.json; the reporting one denied', async (t) => {
  const scripted = Object.entries(lock.packages)
    .filter(([, entry]) => entry.hasInstallScript)
    .map(([path]) => path.replace(/^.*node_modules\//, ''));
  t.ok(scripted.length > 0, `${scripted.join(', ')} have install scripts`);
  for (const name of scripted) t.type(pkg.allowScripts?.[name], 'boolean', `${name}: approved or denied`);
  t.equal(pkg.allowScripts?.['@scarf/scarf'], false, '@scarf/scarf may not run');
  t.equal(pkg.scarfSettings?.enabled, false, 'and is told not to report where npm runs it anyway (npm before allowScripts)');
});
