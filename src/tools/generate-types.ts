/**
 * Generates src/generated/<name>.ts from schemas/<name>.schema.json (json-schema-to-typescript).
 * `--check` fails when a generated file is not current (CI runs it).
 *
 * Each type is declared once, in the file of the schema that defines it. json-schema-to-typescript copies
 * every schema a `$ref` reaches into the file being generated (and numbers a copy whose name is taken:
 * `TrackEvent2`), and its `declareExternallyReferenced: false` drops the file's own referenced $defs
 * too, so a `$ref` to another schema file is handed to it as `tsType: <that schema's title>` and the
 * name is imported from the generated file of that schema. Only the generator's input is rewritten;
 * Ajv validates with schemas/ as they are.
 */
import { readdirSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { compile, type JSONSchema } from 'json-schema-to-typescript';
import { projectRoot, schemasDir } from '../core/paths.js';

type Schema = JSONSchema & Record<string, unknown>;

const outDir = join(projectRoot, 'src', 'generated');
const check = process.argv.includes('--check');
const banner = '/* Generated from schemas/ by src/tools/generate-types.ts (npm run types). Do not edit. */';
const SUFFIX = '.schema.json';

const files = readdirSync(schemasDir).filter((f) => f.endsWith(SUFFIX)).sort();
const schemas = new Map(files.map((f) => [f, JSON.parse(readFileSync(join(schemasDir, f), 'utf8')) as Schema]));

/** `[file, JSON pointer]` of a $ref, resolved against the $id of the schema it is in. */
function refTarget(ref: string, from: string): [string, string] {
  const url = new URL(ref, schemas.get(from)!.$id);
  const file = url.pathname.split('/').pop()!;
  if (!schemas.has(file)) throw new Error(`${from}: $ref ${ref} names no file of schemas/`);
  return [file, decodeURIComponent(url.hash.slice(1))];
}

/** The type name a generated file gives the schema at `pointer`: its title, required for a cross-file $ref. */
function titleAt(file: string, pointer: string, from: string): string {
  const node = pointer.split('/').slice(1).reduce<unknown>((at, key) => (at as Record<string, unknown> | undefined)?.[key.replace(/~1/g, '/').replace(/~0/g, '~')], schemas.get(file));
  const title = (node as Schema | undefined)?.title;
  if (!title) throw new Error(`${from} refers to ${file}#${pointer}, which has no title: give it one, it names the type ${from} imports`);
  return title;
}

/** The schema with each $ref to another file replaced by the name of that file's type, and the names to import. */
function externalRefsAsNames(file: string): { schema: Schema; imports: Map<string, Set<string>> } {
  const imports = new Map<string, Set<string>>();
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit);
    if (node === null || typeof node !== 'object') return node;
    const { $ref, ...rest } = node as Record<string, unknown>;
    if (typeof $ref === 'string') {
      const [target, pointer] = refTarget($ref, file);
      if (target !== file) {
        const extra = Object.keys(rest).filter((k) => k !== 'description');
        if (extra.length > 0) throw new Error(`${file}: $ref ${$ref} has sibling keywords (${extra.join(', ')}); the generated type would drop them`);
        const name = titleAt(target, pointer, file);
        const module = `./${target.slice(0, -SUFFIX.length)}.js`;
        imports.set(module, (imports.get(module) ?? new Set()).add(name));
        return { ...rest, tsType: name };
      }
    }
    return Object.fromEntries(Object.entries(node).map(([k, v]) => [k, visit(v)]));
  };
  return { schema: visit(schemas.get(file)) as Schema, imports };
}

/**
 * A $def that is both an object shape and a combinator (or two combinators) is split by the generator into
 * parts, each named after the $def's key (`EventBody1`, `Message2`); under an `allOf` of one member the
 * parts are no $def and stay anonymous: `EventBody = EventCommon & (TrackEvent | IdentifyEvent)`.
 */
function unsplitCompoundDefs(schema: Schema): Schema {
  const compound = (s: Schema) => ['allOf', 'anyOf', 'oneOf', 'properties'].filter((k) => k in s).length > 1;
  const $defs = schema.$defs as Record<string, Schema> | undefined;
  if (!$defs) return schema;
  const defs = Object.entries($defs).map(([key, def]) => {
    if (!compound(def)) return [key, def];
    const { title, description, ...shape } = def;
    return [key, { title, description, allOf: [shape] }];
  });
  return { ...schema, $defs: Object.fromEntries(defs) };
}

/**
 * `allOf` members that are only if/then/else (flow.schema.json's requirements per category) type nothing
 * the properties do not: left out, so the schema stays one interface instead of an intersection of
 * nameless parts.
 */
function withoutConditionals(schema: Schema): Schema {
  const conditional = (s: unknown) => Object.keys(s as object).every((k) => k === 'if' || k === 'then' || k === 'else');
  const allOf = schema.allOf as unknown[] | undefined;
  if (!allOf?.some(conditional)) return schema;
  const { allOf: _dropped, ...rest } = schema;
  const kept = allOf.filter((s) => !conditional(s));
  return kept.length > 0 ? { ...rest, allOf: kept } as Schema : rest as Schema;
}

const declared = (ts: string) => [...ts.matchAll(/^export (?:type|interface|enum) (\w+)/gm)].map((m) => m[1]!);

const outputs = new Map<string, string>();
const declaredIn = new Map<string, string>();
for (const file of files) {
  const { schema, imports } = externalRefsAsNames(file);
  const importLines = [...imports].map(([module, names]) => `import type { ${[...names].sort().join(', ')} } from '${module}';`);
  const ts = await compile(unsplitCompoundDefs(withoutConditionals(schema)), file, {
    cwd: schemasDir,
    bannerComment: [banner, ...importLines].join('\n'),
    additionalProperties: false,
    unreachableDefinitions: true,
    // Arrays stay T[]: with min/maxItems the generator spells out every tuple length.
    ignoreMinAndMaxItems: true,
    style: { singleQuote: true, bracketSpacing: true },
  });
  const target = file.replace(SUFFIX, '.ts');
  outputs.set(target, ts);
  for (const name of declared(ts)) {
    const other = declaredIn.get(name);
    if (other) throw new Error(`${name} is declared in both ${other} and ${target}: give one of the schemas a distinct title`);
    declaredIn.set(name, target);
    // The generator numbers a name already taken; every schema part is meant to be declared once.
    const base = /^(.*\D)\d+$/.exec(name)?.[1];
    if (base && declared(ts).includes(base)) throw new Error(`${target} declares both ${base} and ${name}`);
  }
}

let stale = 0;
for (const [name, ts] of outputs) {
  const target = join(outDir, name);
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
