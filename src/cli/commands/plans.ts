/**
 * `audiencectl plan …`: tracking plans of custom events (issue 42), and `partner status`: what a partner
 * sees of its own events with its own credentials.
 */
import { type Command, get, jsonFile, numberOrText, orgPath, post, query, seg, usage } from './command.js';

const planPath = (slug: string, eventName: string) => `${orgPath(slug)}/events/plans/${seg(eventName)}`;

export const PLAN_COMMANDS: Command[] = [
  { name: 'plan list', args: ['<slug>'], operations: ['listEventPlans'], summary: 'tracking plans in force', example: 'audiencectl plan list acme', run: get(([slug]) => `${orgPath(slug!)}/events/plans`) },
  {
    name: 'plan get',
    args: ['<slug>', '<event-type>'],
    operations: ['getEventPlan'],
    summary: "a custom event's tracking plan",
    example: 'audiencectl plan get acme custom_booking_completed',
    run: get(([slug, name]) => planPath(slug!, name!)),
  },
  {
    name: 'plan put',
    args: ['<slug>', '<event-type>'],
    options: ['schema', 'mode', 'environments'],
    operations: ['putEventPlan'],
    summary: "create or change a custom event's tracking plan: a JSON Schema of its own properties",
    example: 'audiencectl plan put acme custom_booking_completed --schema booking.schema.json --mode observe --environments production,staging',
    async run(ctx, [slug, name]) {
      const { opts } = ctx;
      if (opts.schema === undefined || opts.mode === undefined) usage('plan put needs --schema <file.json> and --mode observe|enforce');
      const environments = (opts.environments ?? 'production').split(',').map((e) => e.trim()).filter(Boolean);
      ctx.print(await ctx.client.call('PUT', planPath(slug!, name!), { schema: jsonFile(opts.schema, 'the schema'), mode: opts.mode, environments }));
    },
  },
  {
    name: 'plan delete',
    args: ['<slug>', '<event-type>'],
    operations: ['deleteEventPlan'],
    summary: 'delete a tracking plan: events of the name are no longer checked',
    example: 'audiencectl plan delete acme custom_booking_completed',
    run: post('DELETE', ([slug, name]) => planPath(slug!, name!)),
  },
  {
    name: 'plan versions',
    args: ['<slug>', '<event-type>'],
    operations: ['listEventPlanVersions'],
    summary: "a tracking plan's versions, newest first",
    example: 'audiencectl plan versions acme custom_booking_completed',
    run: get(([slug, name]) => `${planPath(slug!, name!)}/versions`),
  },
  {
    name: 'plan infer',
    args: ['<slug>', '<event-type>'],
    options: ['env', 'limit'],
    operations: ['inferEventPlan'],
    summary: 'a draft plan from the newest stored events of the name (nothing is saved)',
    example: 'audiencectl plan infer acme custom_booking_completed --limit 1000',
    async run(ctx, [slug, name]) {
      const { env, limit } = ctx.opts;
      const samples = limit === undefined ? undefined : Number(limit);
      if (samples !== undefined && !(Number.isInteger(samples) && samples >= 1)) usage('--limit takes a whole number of events, at least 1');
      ctx.print(await ctx.client.call('POST', `${planPath(slug!, name!)}/infer`, { ...(env ? { env } : {}), ...(samples ? { samples } : {}) }));
    },
  },
  {
    name: 'plan violations',
    args: ['<slug>', '<event-type>'],
    options: ['env', 'from', 'to'],
    operations: ['listEventPlanViolations'],
    summary: 'violations of a tracking plan: counts per reason, and the newest violating events',
    example: 'audiencectl plan violations acme custom_booking_completed --from 2026-11-01T00:00:00Z',
    run: get(([slug, name], ctx) => `${planPath(slug!, name!)}/violations${query({ env: ctx.opts.env, from: ctx.opts.from, to: ctx.opts.to })}`),
  },
  {
    name: 'partner status',
    args: [],
    options: ['partner-id', 'write-key'],
    operations: ['partnerStatus'],
    summary: "what became of a partner's events, with the partner's own credentials (AUDIENCE_PARTNER_SECRET holds the secret)",
    example: 'AUDIENCE_PARTNER_SECRET=… audiencectl partner status --partner-id p_…',
    async run(ctx) {
      const { opts } = ctx;
      const secret = process.env.AUDIENCE_PARTNER_SECRET ?? '';
      if ((opts['partner-id'] === undefined) === (opts['write-key'] === undefined)) usage('partner status needs --partner-id (and AUDIENCE_PARTNER_SECRET) or --write-key');
      if (opts['partner-id'] !== undefined && secret === '') usage('partner status --partner-id needs the partner secret in AUDIENCE_PARTNER_SECRET (never on the command line)');
      const user = opts['partner-id'] !== undefined ? `${opts['partner-id']}:${secret}` : `${opts['write-key']}:`;
      ctx.print(await ctx.client.call('GET', '/http/v1/status', undefined, undefined, `Basic ${Buffer.from(user).toString('base64')}`));
    },
  },
  {
    name: 'alert get',
    args: ['<slug>'],
    operations: ['getQuarantineAlert'],
    summary: "the org's alert on the quarantined share of an event name",
    example: 'audiencectl alert get acme',
    run: get(([slug]) => `${orgPath(slug!)}/alerts/quarantine`),
  },
  {
    name: 'alert put',
    args: ['<slug>'],
    options: ['url', 'threshold', 'min-events', 'window-seconds'],
    operations: ['putQuarantineAlert'],
    summary: "a signed webhook when an event name's quarantined share crosses the threshold",
    example: 'audiencectl alert put acme --url https://hooks.example.com/audience --threshold 0.05 --min-events 100 --window-seconds 300',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (opts.url === undefined || opts.threshold === undefined) usage('alert put needs --url and --threshold (e.g. 0.05)');
      const body = { url: opts.url, threshold: numberOrText(opts.threshold), minEvents: numberOrText(opts['min-events'] ?? '100'), windowSeconds: numberOrText(opts['window-seconds'] ?? '300') };
      ctx.print(await ctx.client.call('PUT', `${orgPath(slug!)}/alerts/quarantine`, body));
    },
  },
  {
    name: 'alert delete',
    args: ['<slug>'],
    operations: ['deleteQuarantineAlert'],
    summary: "remove the org's quarantine alert",
    example: 'audiencectl alert delete acme',
    run: post('DELETE', ([slug]) => `${orgPath(slug!)}/alerts/quarantine`),
  },
];
