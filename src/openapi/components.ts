/**
 * The JSON Schemas of schemas/ as OpenAPI 3.1 components (3.1 speaks JSON Schema 2020-12, so they are
 * used as they are). Each file's root becomes `<file>` and each of its $defs `<file>.<name>`; every
 * $ref — inside a file (`#/$defs/x`), to another file (`event.schema.json#/$defs/x`) or absolute
 * (`https://audience.dev/schemas/…`) — is rewritten to point at those components.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { schemasDir } from '../core/paths.js';
import { SCHEMA_BASE } from '../core/schemas.js';

/** Service configuration is not part of the HTTP API. */
const NOT_API = new Set(['config']);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

export const componentRef = (file: string, def?: string) => ({ $ref: `#/components/schemas/${def ? `${file}.${def}` : file}` });

export function schemaComponents(): Record<string, Json> {
  const components: Record<string, Json> = {};
  for (const name of readdirSync(schemasDir).filter((f) => f.endsWith('.schema.json'))) {
    const file = name.slice(0, -'.schema.json'.length);
    if (NOT_API.has(file)) continue;
    const { $schema: _, $id: __, $defs, ...root } = JSON.parse(readFileSync(join(schemasDir, name), 'utf8')) as Record<string, Json>;
    components[file] = rewriteRefs(root, file);
    for (const [def, schema] of Object.entries(($defs ?? {}) as Record<string, Json>)) components[`${file}.${def}`] = rewriteRefs(schema, file);
  }
  return components;
}

/** A document whose $refs name schemas/ by their absolute $id, pointing at the components instead. */
export function rewriteSchemaRefs(node: unknown): unknown {
  return rewriteRefs(node as Json, '');
}

function rewriteRefs(node: Json, file: string): Json {
  if (Array.isArray(node)) return node.map((item) => rewriteRefs(item, file));
  if (node === null || typeof node !== 'object') return node;
  // An array schema without `items` takes any items; said explicitly, as OpenAPI tools expect.
  if (node.type === 'array' && !('items' in node) && !('prefixItems' in node)) node = { ...node, items: {} };
  // `discriminator` is an Ajv hint (better error messages); a `oneOf` means the same without it. Client
  // generators read it as OpenAPI inheritance: openapi-typescript gave every schema that `allOf`s the
  // event body a second, conflicting `type` member, and the generated client did not compile.
  const hint = node.discriminator;
  if (hint !== null && typeof hint === 'object' && !Array.isArray(hint) && typeof hint.propertyName === 'string') node = Object.fromEntries(Object.entries(node).filter(([key]) => key !== 'discriminator'));
  const rewritten = Object.fromEntries(Object.entries(node).map(([key, value]) => [key, key === '$ref' && typeof value === 'string' && (file !== '' || value.startsWith(SCHEMA_BASE)) ? componentRef(...target(value, file)).$ref : rewriteRefs(value, file)]));
  return refBesideKeywords(rewritten);
}

/**
 * `{"$ref": …, "minLength": 1}` means both in JSON Schema 2020-12, but @fastify/swagger (and OpenAPI 3.0
 * minded tools) keep only the $ref: the served document then accepted an empty custom eventName that the
 * route refuses. The $ref goes into an `allOf`, where every tool reads both.
 */
function refBesideKeywords(node: { [key: string]: Json }): { [key: string]: Json } {
  const { $ref, ...rest } = node;
  if (typeof $ref !== 'string' || Object.keys(rest).every((key) => key === 'description' || key === 'title')) return node;
  const allOf = Array.isArray(rest.allOf) ? rest.allOf : [];
  return { ...rest, allOf: [{ $ref }, ...allOf] };
}

/** The document without the components no operation reaches (a $defs member only other files use inline, a file of $defs only). */
export function withoutUnusedComponents<T extends { components?: { schemas?: Record<string, unknown> } }>(doc: T): T {
  const schemas = doc.components?.schemas;
  if (!schemas) return doc;
  const prefix = '#/components/schemas/';
  const used = new Set<string>();
  const visit = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(visit);
    else if (node !== null && typeof node === 'object') {
      for (const [key, value] of Object.entries(node)) {
        if (key === '$ref' && typeof value === 'string' && value.startsWith(prefix)) {
          const name = value.slice(prefix.length);
          if (!used.has(name)) {
            used.add(name);
            visit(schemas[name]);
          }
        } else visit(value);
      }
    }
  };
  visit({ ...doc, components: { ...doc.components, schemas: {} } });
  return { ...doc, components: { ...doc.components, schemas: Object.fromEntries(Object.entries(schemas).filter(([name]) => used.has(name))) } };
}

/** `[file, def]` a $ref names. */
function target(ref: string, file: string): [string, string | undefined] {
  const [path, fragment = ''] = ref.replace(SCHEMA_BASE, '').split('#');
  const def = fragment.startsWith('/$defs/') ? fragment.slice('/$defs/'.length) : undefined;
  if (fragment !== '' && def === undefined) throw new Error(`unsupported $ref ${ref} in ${file}.schema.json`);
  return [path ? path.replace(/\.schema\.json$/, '') : file, def];
}
