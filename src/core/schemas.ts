/**
 * The one Ajv instance: every schema in schemas/ registered by its $id, strict, no coercion, no
 * stripping (SPEC 4.1: unknown members are rejected, never silently removed).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { ProblemDetail } from './errors.js';
import { schemasDir } from './paths.js';

// ajv-formats ships CommonJS with a default export property.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

export const SCHEMA_BASE = 'https://audience.dev/schemas/';

function createAjv(): Ajv2020 {
  const ajv = new Ajv2020({
    strict: true,
    allErrors: true,
    coerceTypes: false,
    removeAdditional: false,
    useDefaults: false,
    discriminator: true,
  });
  addFormats(ajv);
  for (const file of readdirSync(schemasDir).filter((f) => f.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(join(schemasDir, file), 'utf8')));
  }
  return ajv;
}

const ajv = createAjv();

/** The compiled validator of `schemas/<file>` (optionally a `#/$defs/...` fragment). */
export function validatorFor<T>(file: string, fragment = ''): ValidateFunction<T> {
  const id = SCHEMA_BASE + file + fragment;
  const validate = ajv.getSchema<T>(id);
  if (!validate) throw new Error(`schema not found: ${id}`);
  return validate;
}

/** Ajv errors as `{ path, message }` with JSON-Pointer paths, unknown members named. */
export function toProblemDetails(errors: ErrorObject[] | null | undefined): ProblemDetail[] {
  // An `if` that failed its then/else says nothing the errors inside it do not say better.
  return (errors ?? []).filter((e) => e.keyword !== 'if').map((e) => {
    // A `false` subschema: a member the rest of the object rules out (a trigger on a scheduled flow).
    if (e.keyword === 'false schema') return { path: e.instancePath, message: 'is not allowed here' };
    if (e.keyword === 'additionalProperties' || e.keyword === 'unevaluatedProperties') {
      const name = (e.params as { additionalProperty?: string; unevaluatedProperty?: string });
      const member = name.additionalProperty ?? name.unevaluatedProperty ?? '';
      return { path: `${e.instancePath}/${member}`, message: 'is not an allowed member' };
    }
    if (e.keyword === 'required') {
      const missing = (e.params as { missingProperty: string }).missingProperty;
      return { path: `${e.instancePath}/${missing}`, message: 'is required' };
    }
    return { path: e.instancePath || '/', message: e.message ?? 'is invalid' };
  });
}

/** Fastify route schemas compile with this same instance, so `$ref`s to schemas/ resolve. */
export function compileRouteSchema(schema: object): ValidateFunction {
  const id = (schema as { $id?: string }).$id;
  return (id && ajv.getSchema(id)) || ajv.compile(schema);
}
