/** The shape of one Snowflake function's translation, and the checks its arguments share. */
import { SqlRefused } from '../sql-tree.js';
import type { Rewriter, Typed } from './kinds.js';
import type { Node } from './nodes.js';

/** Translates one call: `args` as written (not yet rewritten), `call` the FUNCTION node. */
export type Handler = (args: Node[], r: Rewriter, call: Node) => Typed;

export function arity(name: string, args: Node[], min: number, max = min, form?: string): void {
  if (args.length >= min && args.length <= max) return;
  const count = min === max ? `${min}` : `${min} to ${max}`;
  throw new SqlRefused(`${name.toUpperCase()} takes ${count} argument${max === 1 ? '' : 's'} here, not ${args.length}${form ? `: ${form}` : ''}`);
}

export function refuse(construct: string, form: string): never {
  throw new SqlRefused(`${construct} is not translated from Snowflake SQL: ${form}`);
}
