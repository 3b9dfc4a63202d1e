/**
 * Arrows point down: every import in src/ goes to its own room or a room below it, with no circle
 * (the rooms and their ranks are in .dependency-cruiser.cjs; docs/design.md has the map).
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import t from 'tap';
import { projectRoot } from '../src/core/paths.js';

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

async function violations(dir: string): Promise<Violation[]> {
  const bin = join(projectRoot, 'node_modules', '.bin', 'depcruise');
  const { stdout } = await promisify(execFile)(bin, ['src', '--config', '.dependency-cruiser.cjs', '--output-type', 'json'], {
    cwd: dir,
    maxBuffer: 64 * 1024 * 1024,
  }).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }));
  return (JSON.parse(stdout) as { summary: { violations: Violation[] } }).summary.violations;
}

t.test('src/ has no upward import and no circle', async (t) => {
  const found = await violations(projectRoot);
  t.same(found.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`), []);
});

t.test('the rule sees an upward import, a circle and a folder without a rank', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'arch-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  for (const entry of ['src', 'tsconfig.json', '.dependency-cruiser.cjs']) cpSync(join(projectRoot, entry), join(dir, entry), { recursive: true });
  writeFileSync(join(dir, 'src/core/upward.ts'), "export { registerOpsRoutes } from '../routes/ops.js';\n");
  writeFileSync(join(dir, 'src/db/a.ts'), "import { b } from './b.js';\nexport const a = () => b;\n");
  writeFileSync(join(dir, 'src/db/b.ts'), "import { a } from './a.js';\nexport const b = () => a;\n");
  cpSync(join(dir, 'src/core/errors.ts'), join(dir, 'src/nowhere/errors.ts'));
  writeFileSync(join(dir, 'src/nowhere/uses.ts'), "export { AppError } from '../core/errors.js';\n");
  const names = new Set((await violations(dir)).map((v) => `${v.rule.name} ${v.from}`));
  t.ok(names.has('down-from-core src/core/upward.ts'), 'upward import');
  t.ok(names.has('no-circular src/db/a.ts'), 'circle');
  t.ok(names.has('every-file-in-a-room src/nowhere/uses.ts'), 'folder without a rank');
});
