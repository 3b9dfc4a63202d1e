/**
 * JSON paths: Snowflake's steps (keys and indexes) written as a DuckDB JSONPath constant. A key that is
 * not a plain name is quoted with its `"` and `\` escaped, so it stays one key whatever it holds
 * (`$."First Name"`, `$."a.b"`); keys are case-sensitive in both.
 */
import { SqlRefused } from '../sql-tree.js';

export type Step = { key: string } | { index: number };

export function jsonPath(steps: Step[]): string {
  return '$' + steps.map((step) => ('key' in step ? keyStep(step.key) : `[${step.index}]`)).join('');
}

function keyStep(key: string): string {
  if (key === '') throw new SqlRefused('an empty path key is not translated: name the key');
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `."${key.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** The steps an index or key constant makes: `[0]` or `['city']`. */
export function stepOf(value: string | number): Step {
  if (typeof value === 'string') return { key: value };
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new SqlRefused(`a JSON index must be 0 or more (Snowflake gives NULL for [${value}]): write v[0] for the first element`);
  }
  return { index: value };
}

/**
 * A path as GET_PATH and JSON_EXTRACT_PATH_TEXT take it: `a.b[0]`, `a:b`, `"First Name".x`, `['k']`.
 */
export function parseSnowflakePath(path: string): Step[] {
  const steps: Step[] = [];
  const form = /\s*(?:\[\s*(\d+)\s*\]|\[\s*'((?:[^']|'')*)'\s*\]|"((?:[^"]|"")*)"|([A-Za-z_$][A-Za-z0-9_$]*))/y;
  let at = 0;
  while (at < path.length) {
    if (steps.length > 0 && (path[at] === '.' || path[at] === ':')) at++;
    form.lastIndex = at;
    const m = form.exec(path);
    if (!m) throw new SqlRefused(`the path '${path}' is not understood at "${path.slice(at)}": write keys and indexes like 'a.b[0]."First Name"'`);
    if (m[1] !== undefined) steps.push(stepOf(Number(m[1])));
    else steps.push({ key: m[2] !== undefined ? m[2].replaceAll("''", "'") : m[3] !== undefined ? m[3].replaceAll('""', '"') : m[4]! });
    at = form.lastIndex;
  }
  if (steps.length === 0) throw new SqlRefused('an empty path is not translated: write GET_PATH(v, \'a.b\')');
  return steps;
}
