/**
 * Paths the tests name, the same whether a test runs as TypeScript (`test/`, through tsx) or compiled
 * (`dist/test/`, as `npm test` runs it): the repository root, and a file of the running kind.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root: the nearest folder above this file with a package.json (dist/ has none). */
export const ROOT = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error('no package.json above test/helpers');
    dir = up;
  }
  return dir;
})();

/** `name` (a module without extension) next to `callerUrl`, as .ts or .js like the caller. */
export function sibling(callerUrl: string, name: string): string {
  return fileURLToPath(new URL(`${name}.${callerUrl.endsWith('.ts') ? 'ts' : 'js'}`, callerUrl));
}
