// npm runs `prepare` after every `npm ci` / `npm install` in the checkout. A development install has
// TypeScript and builds dist/; a production install (`npm ci --omit=dev`) has no TypeScript and runs the
// dist/ built beforehand (a Docker build stage, or `npm ci && npm run build` on a build machine), so it
// skips the build instead of failing on a missing `tsc` (and tap's build: tap is a dev dependency too).
import { spawnSync } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';

// `npx audiencectl` in the checkout runs the CLI from node_modules/.bin at once. package.json declares no
// `bin`: for a command the project's own package.json names, `npx` installs the project into its cache
// first, `prepare` (the whole build) included, 25 s on a first call. Outside the checkout the name is no
// published package's, so `npx audiencectl` there runs nobody else's code.
mkdirSync('node_modules/.bin', { recursive: true });
rmSync('node_modules/.bin/audiencectl', { force: true });
symlinkSync('../../dist/src/cli.js', 'node_modules/.bin/audiencectl');

try {
  createRequire(import.meta.url).resolve('typescript');
} catch {
  console.log('prepare: TypeScript is not installed (production install); using the dist/ built beforehand');
  process.exit(0);
}
const build = spawnSync('npm', ['run', 'build'], { stdio: 'inherit', shell: process.platform === 'win32' });
if (build.status !== 0) process.exit(build.status ?? 1);
// tap is installed built with its default plugins, and the first run after an install rebuilds it but
// still starts every test file with the old loaders (ts-node, tsx and the mock hook: seconds per file). Built
// here, the suite starts with package.json's plugins (no loader hook) from its first run.
const tap = spawnSync('npx', ['tap', 'build'], { stdio: ['ignore', 'ignore', 'inherit'], shell: process.platform === 'win32' });
process.exit(tap.status ?? 1);
