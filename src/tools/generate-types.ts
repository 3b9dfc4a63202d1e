/**
 * Generates src/generated/*.ts from schemas/*.schema.json (json-schema-to-typescript).
 * `--check` fails when a generated file is not current (CI runs it).
 */
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { compileFromFile } from 'json-schema-to-typescript';
import { projectRoot, schemasDir } from '../core/paths.js';

const outDir = join(projectRoot, 'src', 'generated');
const check = process.argv.includes('--check');
const banner = '/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */';

let stale = 0;
for (const file of readdirSync(schemasDir).filter((f) => f.endsWith('.schema.json')).sort()) {
  const ts = await compileFromFile(join(schemasDir, file), {
    cwd: schemasDir,
    bannerComment: banner,
    additionalProperties: false,
    unreachableDefinitions: true,
    // Arrays stay T[]: with min/maxItems the generator spells out every tuple length.
    ignoreMinAndMaxItems: true,
    style: { singleQuote: true },
  });
  const target = join(outDir, file.replace('.schema.json', '.ts'));
  if (check) {
    if (!existsSync(target) || readFileSync(target, 'utf8') !== ts) {
      console.error(`stale: ${target} (run npm run types)`);
      stale++;
    }
  } else {
    writeFileSync(target, ts);
  }
}
if (stale > 0) process.exit(1);
