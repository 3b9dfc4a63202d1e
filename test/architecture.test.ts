/**
 * Arrows point down: every import in src/ goes to its own room or a room below it, with no circle
 * (the rooms and their ranks are in .dependency-cruiser.cjs; docs/design.md has the map). Files stay
 * small: a file over 300 lines is a sign that two concepts share it (STYLE.md). Tests follow the tree:
 * a folder of test/ is a folder of src/, or one of the few that test across rooms.
 */
import { execFile } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
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

/** The most lines a file under src/ may have. */
const MAX_LINES = 300;
/** Files over MAX_LINES, each named: nothing may join it (none today; the test of the list stays for the next exception). */
const OVER_MAX_LINES = new Set<string>();

/** Lines as `wc -l` counts them: a last line without a newline is not counted. */
function lineCount(text: string): number {
  return text.split('\n').length - 1;
}

t.test('no file under src/ is over 300 lines', async (t) => {
  const files = readdirSync(join(projectRoot, 'src'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile())
    .map((entry) => join(entry.parentPath, entry.name).slice(projectRoot.length).replace(/^\//, ''));
  t.ok(files.length > 100, 'src/ read whole');
  const over = files.filter((file) => lineCount(readFileSync(join(projectRoot, file), 'utf8')) > MAX_LINES).sort();
  t.same(over.filter((file) => !OVER_MAX_LINES.has(file)), [], `split these by responsibility (at most ${MAX_LINES} lines each)`);
  t.same([...OVER_MAX_LINES].filter((file) => !over.includes(file)), [], 'a file split below the limit leaves the list');
});

/** Folders of test/ that are no room of src/: whole-service crashes and deployments, shared helpers. */
const ACROSS_ROOMS = new Set(['crash', 'deploy', 'helpers']);

t.test('test/ folders mirror src/ rooms', async (t) => {
  const testDir = join(projectRoot, 'test');
  const folders = new Set(
    readdirSync(testDir, { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.test.ts'))
      .map((file) => relative(testDir, dirname(join(testDir, file))))
      .filter((folder) => folder !== ''),
  );
  const strays = [...folders].filter((folder) => !ACROSS_ROOMS.has(folder.split('/')[0]!) && !existsSync(join(projectRoot, 'src', folder)));
  t.same(strays.sort(), [], 'each names a folder of src/');
});
