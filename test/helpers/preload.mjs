/**
 * Loaded before every test file (package.json tap "node-arg"). The suite runs the compiled tests in
 * `dist/test/` (`npm test` builds them): plain Node, no loader hooks, ~1.5 s of CPU less per file and per
 * process a test starts. A TypeScript file run alone (`npx tap test/…/x.test.ts`, no build needed) loads
 * tsx first. Then the file's timeout (tap-timeout.ts).
 *
 * Processes a test starts (the service, the CLI, storage and checker processes) do not load tap's
 * process-info hook, which tap puts in NODE_OPTIONS and on every spawn (~0.2 s of CPU each): with
 * coverage off nothing reads what it records.
 */
const typescript = process.argv[1]?.endsWith('.ts') ?? false;
if (typescript) await import('tsx');
await import(typescript ? './tap-timeout.ts' : '../../dist/test/helpers/tap-timeout.js');

// tap writes it quoted: "--import=file:///…/@tapjs/processinfo/dist/esm/import.mjs".
const hook = /"?--import=[^"\s]*@tapjs\/processinfo[^"\s]*"?/g;
const options = process.env.NODE_OPTIONS?.replace(hook, '').trim();
if (options) process.env.NODE_OPTIONS = options;
else delete process.env.NODE_OPTIONS;
globalThis[Symbol.for('process-on-spawn@*:singletonId')]?.listeners.splice(0);

// TEST_CPU_LOG=<file>: each test file appends its CPU (its own and that of the processes it started and
// waited for, from /proc/self/stat), seconds, to find what the suite's time goes to.
if (process.env.TEST_CPU_LOG && process.argv[1]) {
  const { appendFileSync, readFileSync } = await import('node:fs');
  const log = process.env.TEST_CPU_LOG;
  const file = process.argv[1];
  process.on('exit', () => {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const [utime, stime, cutime, cstime] = stat.slice(stat.lastIndexOf(')') + 2).split(' ').slice(11, 15).map(Number);
    appendFileSync(log, `${((utime + stime) / 100).toFixed(1)} ${((cutime + cstime) / 100).toFixed(1)} ${file}\n`);
  });
}
