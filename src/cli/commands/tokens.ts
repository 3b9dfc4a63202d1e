/**
 * `audiencectl token …`: Audience API tokens.
 */
import { type Command, get, orgPath, seg, usage } from './command.js';

export const TOKEN_COMMANDS: Command[] = [
  {
    name: 'token create',
    args: ['<slug>'],
    options: ['created-by', 'label', 'expires-at'],
    operations: ['createToken'],
    summary: 'an Audience API token (shown this once)',
    example: 'audiencectl token create acme --created-by ops@acme.com --label web',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (!opts['created-by']) usage('token create needs --created-by <e-mail>');
      const body = { createdBy: opts['created-by'], ...(opts.label !== undefined ? { label: opts.label } : {}), ...(opts['expires-at'] !== undefined ? { expiresAt: opts['expires-at'] } : {}) };
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/tokens`, body));
    },
  },
  { name: 'token list', args: ['<slug>'], operations: ['listTokens'], summary: "the org's tokens (never their secrets)", example: 'audiencectl token list acme', run: get(([slug]) => `${orgPath(slug!)}/tokens`) },
  {
    name: 'token revoke',
    args: ['<slug>'],
    options: ['id', 'last3', 'created-by'],
    operations: ['revokeToken', 'revokeTokensBySelector'],
    summary: 'stop tokens: one by --id, or those matching --last3 or --created-by',
    example: 'audiencectl token revoke acme --last3 x9Q',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      const selectors = [opts.id, opts.last3, opts['created-by']].filter((v) => v !== undefined);
      if (selectors.length !== 1) usage('token revoke needs exactly one of --id, --last3, --created-by');
      if (opts.id !== undefined) ctx.print(await ctx.client.call('DELETE', `${orgPath(slug!)}/tokens/${seg(opts.id)}`));
      else ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/tokens/revoke`, opts.last3 !== undefined ? { last3: opts.last3 } : { createdBy: opts['created-by'] }));
    },
  },
];
