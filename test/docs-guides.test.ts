/**
 * The guides compose (issue 40): the shell blocks of README.md, docs/partners.md, docs/audience-api.md,
 * docs/cli.md, docs/data-engineers.md (those in its numbered lists too) and docs/api-reference.md run one
 * after another, as written, in one bash session in a directory holding the checkout's docs, against a
 * running service — as a new user following them in order would. Left out are only the lines that start
 * the service or the suite (`npm ci`, `npm start`, `npm test`, `WEBHOOK_ALLOW_PRIVATE=true npm start &`:
 * the service here is started so) and those that write into the home directory (`completion … > ~/…`).
 * `npx audiencectl` is the checkout's CLI, as npx finds it there. What a guide starts in the background
 * (the webhook receiver) is stopped when the session ends. docs/operators.md has no block to run (its
 * blocks are log lines). Then the same README block once more: `org create --save` refuses to touch the
 * file holding the secrets.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import t from 'tap';
import { ADMIN_KEY, appsDir, startTestApp, waitFor } from './helpers/app.js';
import { ROOT } from './helpers/paths.js';

const GUIDES = ['README.md', 'docs/partners.md', 'docs/audience-api.md', 'docs/cli.md', 'docs/data-engineers.md', 'docs/api-reference.md'];
/** Lines not run: they start the service or the suite, or write outside the directory. */
const NOT_RUN = [/^([A-Z_]+=\S+ )?npm (ci|start|test)\b/, /completion (bash|zsh|fish) >/];

/** The `sh` blocks of a guide, in order (indented ones in lists too, unindented), without the lines NOT_RUN. */
function shellBlocks(file: string): string[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  return [...text.matchAll(/^( *)```sh\n([\s\S]*?)^\1```/gm)].map((m) =>
    m[2]!
      .split('\n')
      .map((line) => (line.startsWith(m[1]!) ? line.slice(m[1]!.length) : line))
      .filter((line) => !NOT_RUN.some((re) => re.test(line)))
      .join('\n'),
  );
}

function bash(script: string, cwd: string, env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', script], { cwd, env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr.on('data', (c: Buffer) => (output += c.toString()));
    child.on('close', (code) => resolve({ code, output }));
  });
}

t.test('README, partners, Audience API, CLI and data engineers guides, run in order in one shell', async (t) => {
  const dir = appsDir(t);
  // The directory a user runs them in: the checkout's packages, and data/admin.key where the service keeps it.
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'));
  symlinkSync(join(ROOT, 'docs'), join(dir, 'docs'));
  mkdirSync(join(dir, 'data'));
  writeFileSync(join(dir, 'data', 'admin.key'), ADMIN_KEY, { mode: 0o600 });
  const h = await startTestApp(t, { dataDir: join(dir, 'service'), config: { queriesDir: join(dir, 'queries'), webhookAllowPrivate: true } });
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const prelude = [
    'set -eo pipefail',
    // What a guide starts in the background ends with the session.
    "trap 'kill $(jobs -p) 2>/dev/null' EXIT",
    // npx finds the checkout's own audiencectl when run in it; here it is the same file.
    `npx() { if [ "$1" = audiencectl ]; then shift; node ${JSON.stringify(join(ROOT, 'dist/src/cli.js'))} "$@"; else command npx "$@"; fi; }`,
  ].join('\n');
  const blocks = GUIDES.flatMap((file) => shellBlocks(file).map((block, i) => ({ file, i, block })));
  t.ok(blocks.length >= 8, `${blocks.length} blocks`);
  const script = [prelude, ...blocks.map((b) => `echo "=== ${b.file} block ${b.i + 1}"\n${b.block}`)].join('\n');
  const run = await bash(script, dir, { AUDIENCE_URL: url });
  t.equal(run.code, 0, run.code === 0 ? 'every command ran' : `a command failed; the end of the output:\n${run.output.slice(-3000)}`);

  for (const [slug, file] of [['acme', 'acme.json'], ['globex', 'globex.json'], ['initech', 'initech.json']]) {
    const saved = JSON.parse(readFileSync(join(dir, file!), 'utf8')) as { org: { slug: string }; credentials: { production: { partnerSecret: string } } };
    t.equal(saved.org.slug, slug, `${file}: the org its guide made`);
    t.match(saved.credentials.production.partnerSecret, /\S{20,}/, `${file}: its secrets`);
    t.equal(statSync(join(dir, file!)).mode & 0o777, 0o600, `${file}: readable by its owner only`);
  }
  const sends = await waitFor(async () => {
    const listed = (await h.admin('GET', '/admin/v1/orgs/initech/flows/welcome/sends')).json().sends as unknown[];
    return listed.length > 0 ? listed : undefined;
  }, { what: "the CLI guide's flow sending for its second booking", timeoutMs: 20_000 });
  t.equal(sends.length, 1, "the CLI guide's flow sent for the booking after it started, not the one before");

  const flows = ((await h.admin('GET', '/admin/v1/orgs/acme/flows')).json().flows as Array<{ definition: { id: string }; status: string }>).map((f) => `${f.definition.id}:${f.status}`);
  t.same(flows.filter((f) => /^(203850|stay|december-news):/.test(f)).sort(), ['203850:live', 'december-news:live', 'stay:live'], "the data engineers guide's flows, started");
  t.match(run.output, /ok acme\/booking_completed: 4 rows/, 'its trigger test passed');
  t.match(JSON.parse(readFileSync(join(dir, 'audience-openapi.json'), 'utf8')), { openapi: /^3\./ }, "the API reference guide's OpenAPI document");
  const problems = [...run.output.slice(run.output.indexOf('=== docs/data-engineers.md')).matchAll(/"code":"(\w+)"/g)].map((m) => m[1]);
  t.same(problems, [], 'no command of the data engineers guide was refused');

  // The README's first block again: refused before anything is created, and acme.json keeps its secrets.
  const before = readFileSync(join(dir, 'acme.json'), 'utf8');
  const again = await bash(`${prelude}\n${shellBlocks('README.md').find((b) => b.includes('org create'))!}`, dir, { AUDIENCE_URL: url });
  t.equal(again.code, 2, 'the second run stops at org create');
  t.match(again.output, /acme\.json exists/);
  t.equal(readFileSync(join(dir, 'acme.json'), 'utf8'), before, 'acme.json is untouched');
});
