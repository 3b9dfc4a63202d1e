/**
 * What every command of `audiencectl` is made of: its shape, the context it runs in, and the helpers
 * the command files share (paths, query strings, input files, paged lists).
 */
import { readFileSync } from 'node:fs';
import { type AdminClient, EXIT, Exit, fail } from '../client.js';
import { type CommandLine, type OptionName, UsageError } from '../options.js';
import { printErr } from '../terminal-text.js';

export interface Context {
  opts: CommandLine['values'];
  client: AdminClient;
  /** An answer to stdout, as JSON or a table; `forPeople` reshapes it for the table (counts over time as rows). */
  print(answer: unknown, forPeople?: (answer: unknown) => unknown): void;
  /** The words after the program name, for the next page's command. */
  argv: string[];
}

export interface Command {
  /** One word (`quarantine`) or two (`org create`). */
  name: string;
  args: string[];
  options?: OptionName[];
  /** Admin API operations it calls; an offline command calls none. */
  operations: string[];
  summary: string;
  example: string;
  run(ctx: Context, args: string[]): Promise<void>;
}

/** A slug or id goes into the path as one segment, whatever it holds. */
export const seg = encodeURIComponent;
export const orgPath = (slug: string) => `/admin/v1/orgs/${seg(slug)}`;

export function query(params: Record<string, string | undefined>): string {
  const q = new URLSearchParams(Object.entries(params).filter((e): e is [string, string] => e[1] !== undefined));
  return q.size > 0 ? `?${q}` : '';
}

export function usage(message: string): never {
  throw new UsageError(message);
}

export function readInput(file: string, what: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    return fail(EXIT.usage, `cannot read ${what} ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
  }
}

/** A JSON file the command sends (a flow definition): exit 2 when it is not JSON. */
export function jsonFile(file: string, what: string): unknown {
  try {
    return JSON.parse(readInput(file, what));
  } catch (error) {
    if (error instanceof Exit) throw error;
    return fail(EXIT.usage, `${file} is not JSON: ${(error as Error).message}`);
  }
}

/** A page of a list; when there is more, the command for the next page goes to stderr (stdout stays clean). */
async function page(ctx: Context, path: string): Promise<void> {
  const answer = await ctx.client.call('GET', path);
  ctx.print(answer);
  const { nextCursor } = answer as { nextCursor?: unknown };
  if (typeof nextCursor !== 'string') return;
  const args = ctx.argv.filter((arg, i, all) => !arg.startsWith('--cursor') && all[i - 1] !== '--cursor');
  const quoted = [...args, '--cursor', nextCursor].map((arg) => (/^[\w@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replaceAll("'", "'\\''")}'`));
  printErr(`next page: audiencectl ${quoted.join(' ')}`);
}

export const get = (path: (args: string[], ctx: Context) => string, forPeople?: (answer: unknown) => unknown) => async (ctx: Context, args: string[]) =>
  ctx.print(await ctx.client.call('GET', path(args, ctx)), forPeople);
export const listed = (path: (args: string[], ctx: Context) => string) => (ctx: Context, args: string[]) => page(ctx, path(args, ctx));
export const post = (method: string, path: (args: string[]) => string, body?: (ctx: Context, args: string[]) => unknown) => async (ctx: Context, args: string[]) =>
  ctx.print(await ctx.client.call(method, path(args), body?.(ctx, args)));


/** A number when it reads as one, else the text: the service names what is wrong with it. */
export const numberOrText = (text: string): number | string => (/^-?\d+(\.\d+)?$/.test(text.trim()) ? Number(text) : text);

export function windowBody(opts: Context['opts']): Record<string, unknown> {
  return { ...(opts.from !== undefined ? { from: opts.from } : {}), ...(opts.to !== undefined ? { to: opts.to } : {}) };
}

export function limitOption(opts: Context['opts']): Record<string, number | string> {
  return opts.limit === undefined ? {} : { limit: numberOrText(opts.limit) };
}

/** Counts over time (GET …/activity) as a table: a row per bucket, a column per series. */
export function overTime(times: string[], columns: Array<[string, number[]]>): Array<Record<string, string | number>> {
  return times.map((time, i) => Object.fromEntries([['time', time], ...columns.map(([name, counts]) => [name, counts[i] ?? 0])]));
}

export interface Series {
  total: number;
  counts: number[];
}
