/**
 * `audiencectl org …`: orgs and their settings (as flags), their credentials, write keys and webhook secret.
 */
import { closeSync, openSync, unlinkSync, writeSync } from 'node:fs';
import type { OptionName } from '../options.js';
import { type Command, type Context, get, numberOrText, orgPath, post, seg, usage } from './command.js';

const ORG_SETTINGS: OptionName[] = ['name', 'audience-api', 'rate-limit', 'currency', 'content-fields', 'not-found-status', 'retention', 'frequency-caps', 'quiet-hours', 'time-zone'];

function orgSettings(opts: Context['opts']): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (opts.name !== undefined) body.name = opts.name;
  if (opts['audience-api']) body.audienceApi = true;
  if (opts['no-audience-api']) body.audienceApi = false;
  if (opts['rate-limit'] !== undefined) body.rateLimit = numberOrText(opts['rate-limit']);
  if (opts.currency !== undefined) body.currencySymbol = opts.currency;
  if (opts['content-fields'] !== undefined) body.contentFields = opts['content-fields'].split(',').map((f) => f.trim());
  if (opts['not-found-status'] !== undefined) body.notFoundStatus = numberOrText(opts['not-found-status']);
  if (opts.retention !== undefined) body.retention = retention(opts.retention);
  if (opts['frequency-caps'] !== undefined) body.frequencyCaps = frequencyCaps(opts['frequency-caps']);
  if (opts['quiet-hours'] !== undefined) body.quietHours = quietHours(opts['quiet-hours']);
  if (opts['time-zone'] !== undefined) body.timeZone = opts['time-zone'];
  return body;
}


/** `21:00-08:00@contact` (or @Europe/Lisbon) as the org's quietHours; '' removes them. The service checks the values. */
function quietHours(text: string): Record<string, string> | null {
  if (text.trim() === '') return null;
  const match = /^\s*(\d\d:\d\d)-(\d\d:\d\d)@(\S+)\s*$/.exec(text);
  if (!match) usage('--quiet-hours takes start-end@zone, e.g. 21:00-08:00@contact or 22:00-07:00@Europe/Lisbon');
  return { start: match[1]!, end: match[2]!, timeZone: match[3]! };
}

/** `3/86400@email,10/604800` as the org's frequencyCaps ('' for none); the service checks the values. */
function frequencyCaps(text: string): Array<Record<string, number | string>> {
  return text
    .split(',')
    .filter((cap) => cap.trim() !== '')
    .map((cap) => {
      const match = /^\s*(\d+)\/(\d+)(?:@([a-z]+))?\s*$/.exec(cap);
      if (!match) usage('--frequency-caps takes maxSends/withinSeconds[@channel] items, e.g. 3/86400@email,10/604800');
      return { maxSends: Number(match[1]), withinSeconds: Number(match[2]), ...(match[3] ? { channel: match[3] } : {}) };
    });
}

/** `eventsDays=90,quarantineDays=7` as an object ('' for none); the service checks names and values. */
function retention(text: string): Record<string, number | string> {
  const pairs = text.split(',').filter((pair) => pair.trim() !== '');
  return Object.fromEntries(
    pairs.map((pair) => {
      const [name, value] = pair.split('=').map((part) => part.trim());
      if (!name || value === undefined || value === '') usage('--retention takes name=days pairs, e.g. eventsDays=90,quarantineDays=7');
      return [name, /^\d+$/.test(value) ? Number(value) : value];
    }),
  );
}

// --- triggers, segments, flows ------------------------------------------------------------------------------
/** A new file, readable by its owner only; a usage error when anything has that name. */
function createNew(file: string): number {
  try {
    return openSync(file, 'wx', 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'EEXIST') usage(`${file} exists: it may hold an org's secrets; move it away or name another file (nothing was created)`);
    usage(`${file} cannot be created (${code})`);
  }
}

export const ORG_COMMANDS: Command[] = [
  {
    name: 'org create',
    args: [],
    options: ['slug', 'save', ...ORG_SETTINGS],
    operations: ['createOrg'],
    summary: 'a new org; the answer holds its partner credentials, shown this once (--save keeps it in a new file)',
    example: 'audiencectl org create --slug acme --name Acme --audience-api --save acme.json',
    async run(ctx) {
      if (ctx.opts.slug === undefined) usage('org create needs --slug <slug>');
      const file = ctx.opts.save;
      // Made before the org, and only if new: a second run never empties the file that holds the secrets.
      const fd = file === undefined ? undefined : createNew(file);
      try {
        const answer = (await ctx.client.call('POST', '/admin/v1/orgs', { slug: ctx.opts.slug, name: ctx.opts.name ?? ctx.opts.slug, ...orgSettings(ctx.opts) })) as { org: unknown };
        if (fd === undefined) return ctx.print(answer);
        writeSync(fd, `${JSON.stringify(answer, null, 2)}\n`);
        ctx.print({ org: answer.org, saved: file, holds: 'the partner secrets and write keys, shown this once' });
      } catch (error) {
        if (fd !== undefined) unlinkSync(file!);
        throw error;
      } finally {
        if (fd !== undefined) closeSync(fd);
      }
    },
  },
  { name: 'org list', args: [], operations: ['listOrgs'], summary: 'every org', example: 'audiencectl org list', run: get(() => '/admin/v1/orgs') },
  { name: 'org get', args: ['<slug>'], operations: ['getOrg'], summary: "one org's settings", example: 'audiencectl org get acme', run: get(([slug]) => orgPath(slug!)) },
  {
    name: 'org update',
    args: ['<slug>'],
    options: [...ORG_SETTINGS, 'no-audience-api'],
    operations: ['updateOrg'],
    summary: "change an org's settings (only those given; '' clears retention, caps and quiet hours)",
    example: 'audiencectl org update acme --rate-limit 100 --quiet-hours 21:00-08:00@contact',
    run: post('PATCH', ([slug]) => orgPath(slug!), ({ opts }) => orgSettings(opts)),
  },
  {
    name: 'org delete',
    args: ['<slug>'],
    options: ['yes'],
    operations: ['deleteOrg'],
    summary: 'the org and all its data, for good (the slug is never reused); needs --yes',
    example: 'audiencectl org delete acme --yes',
    async run(ctx, [slug]) {
      if (!ctx.opts.yes) usage('org delete needs --yes: it deletes the org and all its data');
      ctx.print(await ctx.client.call('DELETE', orgPath(slug!)));
    },
  },
  {
    name: 'org rotate',
    args: ['<slug>', '<staging|production>'],
    operations: ['rotateOrgCredentials'],
    summary: 'a new partner secret (the old one stops at once)',
    example: 'audiencectl org rotate acme production',
    run: post('POST', ([slug, env]) => `${orgPath(slug!)}/credentials/${seg(env!)}/rotate`),
  },
  {
    name: 'write-key rotate',
    args: ['<slug>', '<staging|production>'],
    operations: ['rotateWriteKey'],
    summary: 'a new write key for Segment / RudderStack / Jitsu SDKs (shown once; the old one stops at once)',
    example: 'audiencectl write-key rotate acme production',
    run: post('POST', ([slug, env]) => `${orgPath(slug!)}/credentials/${seg(env!)}/write-key/rotate`),
  },
  {
    name: 'write-key revoke',
    args: ['<slug>', '<staging|production>'],
    operations: ['revokeWriteKey'],
    summary: "stop the environment's write key",
    example: 'audiencectl write-key revoke acme staging',
    run: post('DELETE', ([slug, env]) => `${orgPath(slug!)}/credentials/${seg(env!)}/write-key`),
  },
  {
    name: 'webhook-secret',
    args: ['<slug>'],
    operations: ['getWebhookSecret'],
    summary: "the key webhook receivers verify the org's signatures with",
    example: 'audiencectl webhook-secret acme',
    run: get(([slug]) => `${orgPath(slug!)}/webhook-secret`),
  },
];
