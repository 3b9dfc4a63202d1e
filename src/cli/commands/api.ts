/**
 * `audiencectl api METHOD PATH [--data JSON|@file]`: any call of the admin API (or another path of the
 * service) with the admin key, its answer printed like every command's — for what no command covers yet.
 */
import { type Command, jsonFile, usage } from './command.js';

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

export const API_COMMANDS: Command[] = [
  {
    name: 'api',
    args: ['<method>', '<path>'],
    options: ['data'],
    operations: [],
    summary: 'any call of the service with the admin key: METHOD /path, a JSON body from --data',
    example: "audiencectl api GET '/admin/v1/orgs/acme/flows?archived=true'",
    async run(ctx, [method, path]) {
      const verb = method!.toUpperCase();
      if (!METHODS.includes(verb)) usage(`api takes one of ${METHODS.join(', ')}, not ${method}`);
      // A path of this service only: the admin key goes with it.
      if (!path!.startsWith('/') || path!.startsWith('//')) usage(`api takes a path of the service, starting with one /: ${path}`);
      const data = ctx.opts.data;
      const body = data === undefined ? undefined : data.startsWith('@') ? jsonFile(data.slice(1), 'the body') : parseBody(data);
      ctx.print(await ctx.client.call(verb, path!, body));
    },
  },
];

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (error) {
    return usage(`--data is not JSON (${(error as Error).message}); give JSON, or @file.json`);
  }
}
