/**
 * Nothing a partner sent acts on the operator's terminal: `audiencectl` prints every answer, table or JSON,
 * and every error with no raw control character (the escape sequences that write the clipboard, retitle
 * the window or clear the screen; C1's one-byte CSI; bidi overrides). The names are ones stored before event
 * names refused controls (written into the org database here) and property keys, which are still taken as
 * sent; the errors come from a real HTTP server answering problem+json that quotes them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import t from 'tap';
import { terminalSafe } from '../../src/cli/terminal-text.js';
import { validatorFor } from '../../src/core/schemas.js';
import { ADMIN_KEY, customEvent, startTestApp } from '../helpers/app.js';
import { runCli } from '../helpers/cli.js';
import { ROOT } from '../helpers/entry.js';

/** What may not reach a terminal raw: every control but the line break, and the bidi controls. */
const RAW = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]/;

const HOSTILE = [
  'custom_\u001b]52;c;aGFja2Vk\u0007', // OSC 52: writes the clipboard
  'custom_\u001b]0;pwned\u0007', // OSC 0: the window title
  'custom_\u001b[2J\u001b[H', // clears the screen
  'custom_\u009b2J', // C1's one-byte CSI
  'custom_\u009d0;t\u009c', // C1 OSC … ST
  'custom_a\rb\u007f', // CR overwrites the line
  'custom_\u202eevil', // right-to-left override
  'custom_\u2028next',
];

/** The first raw control and what is around it (readably), or undefined: a report of the whole output would carry it raw. */
function firstRaw(text: string): string | undefined {
  const at = text.search(RAW);
  if (at < 0) return undefined;
  const around = [...text.slice(Math.max(0, at - 20), at + 20)];
  return around.map((c) => (RAW.test(c) || c === '\n' ? `U+${c.codePointAt(0)!.toString(16).padStart(4, '0')}` : c)).join('');
}

t.test("terminalSafe escapes exactly what event names refuse (schemas/event-parts.schema.json controlFree), keeping line breaks", async (t) => {
  const controlFree = validatorFor<string>('event-parts.schema.json', '#/$defs/controlFree');
  const differ: string[] = [];
  for (let code = 0; code <= 0xffff; code++) {
    const c = String.fromCharCode(code);
    if (c === '\n') continue;
    if ((controlFree(c) === true) !== (terminalSafe(c) === c)) differ.push(`U+${code.toString(16)}`);
  }
  t.same(differ, [], 'the same set for every BMP code point');
  t.equal(terminalSafe('a\nb'), 'a\nb', 'the CLI keeps its own line breaks');
});

t.test('every print of the CLI goes through terminal-text.ts', async (t) => {
  const files = ['src/cli.ts', ...readdirSync(`${ROOT}/src/cli`, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts')).map((f) => `src/cli/${f}`)].filter(
    (f) => f !== 'src/cli/terminal-text.ts',
  );
  const prints = files.flatMap((file) =>
    readFileSync(`${ROOT}/${file}`, 'utf8')
      .split('\n')
      .map((line, i) => ({ where: `${file}:${i + 1}`, line }))
      // The completion script is ours, written as it is.
      .filter(({ line }) => /console\.|process\.std(out|err)\.write/.test(line) && !line.includes('completionScript(')),
  );
  t.same(prints.map((p) => p.where), [], 'no console.* or direct stream write elsewhere');
});

t.test('terminalSafe output: no raw control, and JSON reads back the same value', async (t) => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (text) => {
      const safe = terminalSafe(text);
      if (RAW.test(safe)) return false;
      const json = terminalSafe(JSON.stringify({ [text]: text }, null, 2));
      if (RAW.test(json)) return false;
      const back = JSON.parse(json) as Record<string, string>;
      return back[text] === text;
    }),
    { numRuns: 2000 },
  );
  t.pass('2,000 strings of any code point');
});

t.test('events types with hostile names and property keys, as a table and as JSON', async (t) => {
  const h = await startTestApp(t);
  const url = await h.app.listen({ port: 0, host: '127.0.0.1' });
  const cred = (await h.createOrg('acme')).production;
  // Names stored before this service refused them: written into the org database as a fold leaves them.
  for (const [i, name] of HOSTILE.entries()) {
    await h.db().run(`INSERT INTO event_types VALUES ('production', $1, 1, now(), $2::JSON, false)`, [name, JSON.stringify({ [HOSTILE[(i + 1) % HOSTILE.length]!]: ['string'] })]);
  }
  // Property keys are still taken as sent.
  const keys = Object.fromEntries(HOSTILE.map((key, i) => [key.slice('custom_'.length), i]));
  t.equal((await h.collect(customEvent(cred, { properties: { eventName: 'plain', properties: keys } }))).statusCode, 200);
  await h.compacted();

  const env = { ...process.env, AUDIENCE_URL: url, ADMIN_KEY };
  const table = await runCli(['events', 'types', 'acme', '--table'], env);
  t.equal(table.code, 0, table.stderr);
  t.equal(firstRaw(table.stdout), undefined, 'no raw control in the table');
  t.equal(firstRaw(table.stderr), undefined, 'nor on stderr');
  t.match(table.stdout, 'custom_\\u001b]52;c;', 'the escape shown, visibly');
  t.match(table.stdout, 'custom_\\u009b2J');
  t.match(table.stdout, 'custom_\\u202eevil');
  const [head, ...rows] = table.stdout.trimEnd().split('\n');
  const column = head!.indexOf('ENVIRONMENT');
  t.same(rows.map((row) => row.indexOf('production')), rows.map(() => column), 'columns stay aligned with the escapes in them');

  const json = await runCli(['events', 'types', 'acme', '--json'], env);
  t.equal(json.code, 0, json.stderr);
  t.equal(firstRaw(json.stdout), undefined, 'no raw control in the JSON');
  const types = (JSON.parse(json.stdout) as { types: Array<{ eventType: string; properties: Record<string, string> }> }).types;
  t.same(types.map((e) => e.eventType).filter((n) => n !== 'custom_plain').sort(), [...HOSTILE].sort(), 'the JSON reads back to the names as stored');
  t.same(Object.keys(types.find((e) => e.eventType === 'custom_plain')!.properties).sort(), Object.keys(keys).sort(), 'and the property keys');
});

t.test("a service's problem detail that quotes partner text: one safe line, or the problem+json escaped", async (t) => {
  const quoted = HOSTILE.join(' ');
  const server = createServer((_req, res) => {
    res.writeHead(422, { 'content-type': 'application/problem+json' }).end(JSON.stringify({ type: 'about:blank', title: quoted, status: 422, code: 'x\u001b]0;t\u0007', detail: `event ${quoted} refused` }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const env = { ...process.env, AUDIENCE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, ADMIN_KEY };

  const human = await runCli(['org', 'get', 'acme', '--table'], env);
  t.equal(human.code, 1, 'refused');
  t.equal(human.stdout, '');
  t.equal(firstRaw(human.stderr), undefined, 'no raw control in the line');
  t.match(human.stderr, /^audiencectl: 422 x\\u001b\]0;t\\u0007: event custom_\\u001b\]52;c;/);

  const script = await runCli(['org', 'get', 'acme', '--json'], env);
  t.equal(script.code, 1);
  t.equal(firstRaw(script.stderr), undefined, 'no raw control in the problem');
  t.equal((JSON.parse(script.stderr) as { detail: string }).detail, `event ${quoted} refused`, 'the problem+json reads back the same');
});
