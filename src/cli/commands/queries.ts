/**
 * The commands triggers, segments and traits share (list, get, put, delete, validate, preview, versions):
 * each is a named SQL query with versions.
 */
import { join } from 'node:path';
import { type Command, type Context, get, limitOption, listed, orgPath, post, query, readInput, seg, windowBody } from './command.js';

/** The query's SQL: --sql, or its file in ./queries as the service lays them out. */
export function sqlFile(opts: Context['opts'], slug: string, name: string): string {
  return opts.sql ?? join('queries', slug, `${name}.sql`);
}

/** list, get, put, versions, preview (and validate) for triggers, segments and traits alike. */
export function queryCommands(kind: 'trigger' | 'segment' | 'trait'): Command[] {
  const Kind = `${kind[0]!.toUpperCase()}${kind.slice(1)}`;
  const plural = `${kind}s`;
  const example = { trigger: 'booking_completed', segment: 'vip', trait: 'lifetime_bookings' }[kind];
  const path = (slug: string, name: string) => `${orgPath(slug)}/${plural}/${seg(name)}`;
  return [
    {
      name: `${kind} list`,
      args: ['<slug>'],
      operations: [`list${Kind}s`],
      summary: `the org's ${plural}: status, live and latest version`,
      example: `audiencectl ${kind} list acme`,
      run: get(([slug]) => `${orgPath(slug!)}/${plural}`),
    },
    {
      name: `${kind} get`,
      args: ['<slug>', '<name>'],
      operations: [`get${Kind}`],
      summary: `one ${kind}: its live SQL, status and why a version was refused`,
      example: `audiencectl ${kind} get acme ${example}`,
      run: get(([slug, name]) => path(slug!, name!)),
    },
    {
      name: `${kind} put`,
      args: ['<slug>', '<name>'],
      options: ['sql'],
      operations: [`save${Kind}`],
      summary: `save the ${kind}'s SQL (--sql file, default queries/<slug>/<name>.sql); a refused version leaves the live one live`,
      example: `audiencectl ${kind} put acme ${example} --sql ${example}.sql`,
      run: post('PUT', ([slug, name]) => path(slug!, name!), ({ opts }, [slug, name]) => ({ sql: readInput(sqlFile(opts, slug!, name!), `the ${kind} SQL`) })),
    },
    {
      name: `${kind} delete`,
      args: ['<slug>', '<name>'],
      operations: [`delete${Kind}`],
      summary: `delete the ${kind} no flow names: its file in QUERIES_DIR goes, its versions stay`,
      example: `audiencectl ${kind} delete acme ${example}`,
      run: post('DELETE', ([slug, name]) => path(slug!, name!)),
    },
    {
      name: `${kind} validate`,
      args: ['<slug>', '<name>'],
      options: ['sql'],
      operations: [`preview${Kind}`],
      summary: `check SQL without saving it: exit 0 when the service would take it, 1 with the reason when not`,
      example: `audiencectl ${kind} validate acme ${example} --sql ${example}.sql`,
      async run(ctx, [slug, name]) {
        const sql = readInput(sqlFile(ctx.opts, slug!, name!), `the ${kind} SQL`);
        const answer = (await ctx.client.call('POST', `${path(slug!, name!)}/preview`, { sql, limit: 1 })) as { window: unknown };
        ctx.print({ valid: true, [kind]: name, window: answer.window });
      },
    },
    {
      name: `${kind} preview`,
      args: ['<slug>', '<name>'],
      options: ['sql', 'from', 'to', 'limit'],
      operations: [`preview${Kind}`],
      summary: `run the ${kind} (or --sql) over a window (default the last 24 h) without saving; its rows`,
      example: `audiencectl ${kind} preview acme ${example} --limit 20`,
      run: post('POST', ([slug, name]) => `${path(slug!, name!)}/preview`, ({ opts }, [slug, name]) => ({
        ...(opts.sql !== undefined ? { sql: readInput(sqlFile(opts, slug!, name!), `the ${kind} SQL`) } : {}),
        ...windowBody(opts),
        ...limitOption(opts),
      })),
    },
    {
      name: `${kind} versions`,
      args: ['<slug>', '<name>'],
      options: ['limit', 'cursor'],
      operations: [`list${Kind}Versions`],
      summary: `every version, newest first: hash, SQL, why it was refused${kind === 'trigger' ? ', rows decided and sends fired' : ''}`,
      example: `audiencectl ${kind} versions acme ${example}`,
      run: listed(([slug, name], { opts }) => `${path(slug!, name!)}/versions${query({ limit: opts.limit, cursor: opts.cursor })}`),
    },
  ];
}
