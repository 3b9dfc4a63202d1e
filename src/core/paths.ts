/** Locates the project's own files (schemas/, pipelines/) from both src/ (tsx) and dist/src/ (built). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findProjectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const parent = dirname(dir);
    if (parent === dir) throw new Error('package.json not found above ' + fileURLToPath(import.meta.url));
    dir = parent;
  }
  return dir;
}

export const projectRoot = findProjectRoot();
export const schemasDir = join(projectRoot, 'schemas');
export const pipelinesDir = join(projectRoot, 'pipelines');

/** The service's version, from its package.json. */
export function serviceVersion(): string {
  return (JSON.parse(readFileSync(join(projectRoot, 'package.json'), 'utf8')) as { version: string }).version;
}
