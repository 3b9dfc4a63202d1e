/**
 * `audiencectl topic …`: subscription topics.
 */
import { type Command, get, orgPath, post, seg, usage } from './command.js';

export const TOPIC_COMMANDS: Command[] = [
  { name: 'topic list', args: ['<slug>'], operations: ['listTopics'], summary: 'subscription topics', example: 'audiencectl topic list acme', run: get(([slug]) => `${orgPath(slug!)}/topics`) },
  {
    name: 'topic put',
    args: ['<slug>', '<topic>'],
    options: ['name', 'default'],
    operations: ['putTopic'],
    summary: 'create or change a topic',
    example: "audiencectl topic put acme news --name 'Newsletter' --default unsubscribed",
    async run(ctx, [slug, topic]) {
      if (ctx.opts.name === undefined || ctx.opts.default === undefined) usage('topic put needs --name and --default subscribed|unsubscribed');
      ctx.print(await ctx.client.call('PUT', `${orgPath(slug!)}/topics/${seg(topic!)}`, { name: ctx.opts.name, default: ctx.opts.default }));
    },
  },
  {
    name: 'topic delete',
    args: ['<slug>', '<topic>'],
    operations: ['deleteTopic'],
    summary: "delete a topic no flow names (contacts' choices for it are kept)",
    example: 'audiencectl topic delete acme news',
    run: post('DELETE', ([slug, topic]) => `${orgPath(slug!)}/topics/${seg(topic!)}`),
  },
];
