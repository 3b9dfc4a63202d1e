/**
 * How tests start the service's entry points (the server, the CLI) as processes: from the build in
 * `dist/` when it is newer than every file of `src/` — what `npm start` runs, and `npm test` builds it
 * first — else from the source through tsx (a file run alone after an edit, with no build). A start from
 * the build is ~1 s faster (3.0–3.4 s → 1.9–2.3 s to ready, its storage process included), and the suite
 * starts some hundred of them.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ROOT } from './paths.js';

/** The repository root: run entry points with it as cwd. */
export { ROOT };

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

let fresh: boolean | undefined;

/** Ends the process once the test that started it is gone (exit-with-parent.mjs). */
export const EXIT_WITH_PARENT = ['--import', pathToFileURL(join(ROOT, 'test', 'helpers', 'exit-with-parent.mjs')).href];

/** `node` arguments that run `src/<entry>.ts` (relative to ROOT). */
export function entryArgs(entry: 'server' | 'cli'): string[] {
  const built = join(ROOT, 'dist', 'src', `${entry}.js`);
  fresh ??= existsSync(built) && statSync(built).mtimeMs >= newestSource(join(ROOT, 'src'));
  return [...EXIT_WITH_PARENT, ...(fresh && existsSync(built) ? [built] : ['--import', 'tsx', `src/${entry}.ts`])];
}
