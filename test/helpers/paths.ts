/**
 * Paths the tests name, the same whether a test runs as TypeScript (`test/`, through tsx) or compiled
 * (`dist/test/`, as `npm test` runs it): the repository root (the service's own lookup, which works from
 * `src/` and `dist/src/` alike), and a file of the running kind.
 */
import { fileURLToPath } from 'node:url';

export { projectRoot as ROOT } from '../../src/core/paths.js';

/** `name` (a module without extension) next to `callerUrl`, as .ts or .js like the caller. */
export function sibling(callerUrl: string, name: string): string {
  return fileURLToPath(new URL(`${name}.${callerUrl.endsWith('.ts') ? 'ts' : 'js'}`, callerUrl));
}
