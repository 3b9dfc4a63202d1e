/**
 * `audiencectl flow …`: flows from JSON definitions, their life (start, pause, run) and what they did.
 */
import { EXIT, fail } from '../client.js';
import { type Command, type Series, get, jsonFile, listed, orgPath, overTime, post, query, readInput, seg, usage, windowBody } from './command.js';

function flowActivityTable(answer: unknown): unknown {
  const a = answer as { range: unknown; bucket: string; times: string[]; sends: Array<Series & { status: string }>; funnel: { skipped: Array<{ reason: string; atStep: boolean; count: number }> } & Record<string, unknown> };
  const skipped = a.funnel.skipped.map((s) => `${s.reason}${s.atStep ? ' (at a step)' : ''} ${s.count}`).join(', ') || '-';
  return { range: a.range, bucket: a.bucket, funnel: { ...a.funnel, skipped }, sends: overTime(a.times, a.sends.map((s): [string, number[]] => [s.status, s.counts])) };
}

const flowPath = (slug: string, id: string) => `${orgPath(slug)}/flows/${seg(id)}`;

export const FLOW_COMMANDS: Command[] = [
  {
    name: 'flow list',
    args: ['<slug>'],
    options: ['archived'],
    operations: ['listFlows'],
    summary: "the org's flows and their status (--archived: the deleted ones)",
    example: 'audiencectl flow list acme',
    run: get(([slug], { opts }) => `${orgPath(slug!)}/flows${opts.archived ? '?archived=true' : ''}`),
  },
  { name: 'flow get', args: ['<slug>', '<flow-id>'], operations: ['getFlow'], summary: 'one flow: definition, status, last run', example: 'audiencectl flow get acme welcome', run: get(([slug, id]) => flowPath(slug!, id!)) },
  {
    name: 'flow create',
    args: ['<slug>'],
    options: ['file'],
    operations: ['createFlow'],
    summary: 'a new flow, a draft, from a JSON definition (schemas/flow.schema.json)',
    example: 'audiencectl flow create acme --file welcome.json',
    async run(ctx, [slug]) {
      if (ctx.opts.file === undefined) usage('flow create needs --file <flow.json>');
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/flows`, jsonFile(ctx.opts.file, 'the flow definition')));
    },
  },
  {
    name: 'flow put',
    args: ['<slug>', '<flow-id>'],
    options: ['file'],
    operations: ['replaceFlow'],
    summary: "replace a flow's definition (its id must stay the same)",
    example: 'audiencectl flow put acme welcome --file welcome.json',
    async run(ctx, [slug, id]) {
      if (ctx.opts.file === undefined) usage('flow put needs --file <flow.json>');
      ctx.print(await ctx.client.call('PUT', flowPath(slug!, id!), jsonFile(ctx.opts.file, 'the flow definition')));
    },
  },
  {
    name: 'flow start',
    args: ['<slug>', '<flow-id>'],
    operations: ['startFlow'],
    summary: 'make the flow live (its definition is checked again first)',
    example: 'audiencectl flow start acme welcome',
    run: post('POST', ([slug, id]) => `${flowPath(slug!, id!)}/start`),
  },
  {
    name: 'flow delete',
    args: ['<slug>', '<flow-id>'],
    operations: ['deleteFlow'],
    summary: 'archive the flow: it stops for good (queued sends cancelled, waiting entries leave); its history and id stay',
    example: 'audiencectl flow delete acme welcome',
    run: post('DELETE', ([slug, id]) => flowPath(slug!, id!)),
  },
  { name: 'flow pause', args: ['<slug>', '<flow-id>'], operations: ['pauseFlow'], summary: 'stop sending; start resumes where it stopped', example: 'audiencectl flow pause acme welcome', run: post('POST', ([slug, id]) => `${flowPath(slug!, id!)}/pause`) },
  {
    name: 'flow run',
    args: ['<slug>', '<flow-id>'],
    operations: ['runFlow'],
    summary: 'run a live triggered flow now, once, instead of waiting for its schedule; it sends for real',
    example: 'audiencectl flow run acme welcome',
    run: post('POST', ([slug, id]) => `${flowPath(slug!, id!)}/run`),
  },
  {
    name: 'flow preview',
    args: ['<slug>', '<flow-id>'],
    options: ['variant'],
    operations: ['getFlow', 'previewFlowMessage'],
    summary: "the flow's message rendered for the first row its trigger returns over the last 24 h; nothing is sent",
    example: 'audiencectl flow preview acme welcome',
    async run(ctx, [slug, id]) {
      const { definition } = (await ctx.client.call('GET', flowPath(slug!, id!))) as { definition: Record<string, unknown> };
      const { trigger, message, branches, experiment, name } = definition;
      if (trigger === undefined || (message === undefined && branches === undefined)) {
        fail(EXIT.refused, `flow ${id} has no trigger and message to preview (a flow with steps: preview each step's message in the console)`);
      }
      const body = { trigger, message, ...(branches ? { branches } : {}), ...(experiment ? { experiment } : {}), flowName: name, ...(ctx.opts.variant ? { variant: ctx.opts.variant } : {}) };
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/flows/message-preview`, body));
    },
  },
  {
    name: 'flow simulate',
    args: ['<slug>', '<flow-id>'],
    options: ['identity', 'from', 'to', 'sql', 'definition'],
    operations: ['simulateFlow'],
    summary: 'what the flow would do now for one contact (--sql, --definition: unsaved versions); nothing sent or recorded',
    example: 'audiencectl flow simulate acme welcome --identity email:ada@example.com',
    async run(ctx, [slug, id]) {
      const { opts } = ctx;
      if (!opts.identity) usage('flow simulate needs --identity (email:…, user_id:… or email-hash:…)');
      const body: Record<string, unknown> = { identity: opts.identity, ...windowBody(opts) };
      if (opts.sql !== undefined) body.sql = readInput(opts.sql, 'the trigger SQL');
      if (opts.definition !== undefined) body.definition = jsonFile(opts.definition, 'the flow definition');
      ctx.print(await ctx.client.call('POST', `${flowPath(slug!, id!)}/simulate`, body));
    },
  },
  {
    name: 'flow sends',
    args: ['<slug>', '<flow-id>'],
    options: ['status', 'identity', 'limit', 'cursor'],
    operations: ['listFlowSends'],
    summary: "the flow's sends, newest first: status, attempts, last error",
    example: 'audiencectl flow sends acme welcome --status dead',
    run: listed(([slug, id], { opts }) => `${flowPath(slug!, id!)}/sends${query({ status: opts.status, identity: opts.identity, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'flow decisions',
    args: ['<slug>', '<flow-id>'],
    options: ['identity', 'limit', 'cursor'],
    operations: ['listFlowDecisions'],
    summary: 'what the flow decided for each trigger row: sent, or skipped and why',
    example: 'audiencectl flow decisions acme welcome --identity email:ada@example.com',
    run: listed(([slug, id], { opts }) => `${flowPath(slug!, id!)}/decisions${query({ identity: opts.identity, limit: opts.limit, cursor: opts.cursor })}`),
  },
  {
    name: 'flow results',
    args: ['<slug>', '<flow-id>'],
    options: ['from', 'to'],
    operations: ['getFlowResults'],
    summary: 'entered, sent, delivered and converted, per variant',
    example: 'audiencectl flow results acme welcome --from 2026-01-01T00:00:00Z',
    run: get(([slug, id], { opts }) => `${flowPath(slug!, id!)}/results${query({ from: opts.from, to: opts.to })}`),
  },
  {
    name: 'flow activity',
    args: ['<slug>', '<flow-id>'],
    options: ['from', 'to', 'bucket'],
    operations: ['getFlowActivity'],
    summary: 'sends per status over time, and the funnel: entered, decided, sent, delivered, skipped by reason',
    example: 'audiencectl flow activity acme welcome --bucket hour',
    run: get(([slug, id], { opts }) => `${flowPath(slug!, id!)}/activity${query({ from: opts.from, to: opts.to, bucket: opts.bucket })}`, flowActivityTable),
  },
  {
    name: 'flow waits',
    args: ['<slug>', '<flow-id>'],
    options: ['identity', 'limit'],
    operations: ['listFlowWaits'],
    summary: 'entries still in the flow: the step, what it waits for, until when',
    example: 'audiencectl flow waits acme onboarding',
    run: get(([slug, id], { opts }) => `${flowPath(slug!, id!)}/waits${query({ identity: opts.identity, limit: opts.limit })}`),
  },
  {
    name: 'flow occurrences',
    args: ['<slug>', '<flow-id>'],
    options: ['limit', 'cursor'],
    operations: ['listFlowOccurrences'],
    summary: "a scheduled or recurring flow's occurrences: status, members, progress",
    example: 'audiencectl flow occurrences acme weekly_digest',
    run: listed(([slug, id], { opts }) => `${flowPath(slug!, id!)}/occurrences${query({ limit: opts.limit, cursor: opts.cursor })}`),
  },
];
