/**
 * The served /openapi.json passes Spectral's OpenAPI rules (`spectral:oas`, as .spectral.yaml sets them):
 * no error and no warning, so generators and linters take it as it is.
 */
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import spectralCore from '@stoplight/spectral-core';
import spectralParsers from '@stoplight/spectral-parsers';
import { oas } from '@stoplight/spectral-rulesets';
import t from 'tap';
import { parse } from 'yaml';
import { startTestApp } from '../helpers/app.js';
import { ROOT } from '../helpers/paths.js';

// CommonJS packages: their named exports arrive on the default export under tsx.
const { Spectral, Document } = spectralCore;
const { Json } = spectralParsers;

/** .spectral.yaml: `extends: spectral:oas`, and any rule it turns off (each with its reason there). */
function ruleset() {
  const config = parse(readFileSync(join(ROOT, '.spectral.yaml'), 'utf8')) as { extends: string[]; rules?: Record<string, 'off'> };
  if (JSON.stringify(config.extends) !== JSON.stringify(['spectral:oas'])) throw new Error('.spectral.yaml: this test knows only extends: ["spectral:oas"]');
  return { extends: [[oas, 'recommended']] as never, rules: config.rules ?? {} };
}

t.test('Spectral finds no error and no warning in the served document', async (t) => {
  const h = await startTestApp(t);
  const res = await h.app.inject({ url: '/openapi.json' });
  t.equal(res.statusCode, 200);
  const spectral = new Spectral();
  spectral.setRuleset(ruleset());
  const results = await spectral.run(new Document(res.body, Json, 'openapi.json'));
  // 0 error, 1 warn, 2 info, 3 hint.
  const findings = results.filter((r) => r.severity <= 1).map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`);
  t.same(findings, [], 'no Spectral error or warning');
  t.ok(Object.keys((res.json() as { paths: object }).paths).length > 30, 'and it linted the whole document');
});
