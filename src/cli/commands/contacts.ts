/**
 * `audiencectl contact …`: one contact's profile, imports, consent and erasure.
 */
import { type Command, orgPath, query, readInput, seg, usage } from './command.js';

export const CONTACT_COMMANDS: Command[] = [
  {
    name: 'contact lookup',
    args: ['<slug>'],
    options: ['identity'],
    operations: ['getOrgContact'],
    summary: "one contact's profile, every field, and its consent per topic (what the Audience API answers, and more)",
    example: 'audiencectl contact lookup acme --identity email:ada@example.com',
    async run(ctx, [slug]) {
      if (ctx.opts.identity === undefined) usage('contact lookup needs --identity email:<address> (or user_id:, email-hash:)');
      ctx.print(await ctx.client.call('GET', `${orgPath(slug!)}/contacts${query({ identity: ctx.opts.identity })}`));
    },
  },
  {
    name: 'contact import',
    args: ['<slug>', '<file.csv|file.ndjson>'],
    operations: ['importContacts'],
    summary: 'contacts and their traits from a CSV (header row) or NDJSON file',
    example: 'audiencectl contact import acme contacts.csv',
    async run(ctx, [slug, file]) {
      const type = file!.endsWith('.csv') ? 'text/csv' : /\.(ndjson|jsonl)$/.test(file!) ? 'application/x-ndjson' : undefined;
      if (!type) usage('contact import takes a .csv (with a header row) or .ndjson file');
      ctx.print(await ctx.client.call('POST', `${orgPath(slug!)}/contacts/import`, readInput(file!, 'the contacts'), type));
    },
  },
  {
    name: 'contact consent',
    args: ['<slug>'],
    options: ['identity', 'topic', 'status'],
    operations: ['putContactConsent'],
    summary: "set a contact's subscription to a topic",
    example: 'audiencectl contact consent acme --identity email:ada@example.com --topic news --status unsubscribed',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (opts.identity === undefined || opts.topic === undefined || opts.status === undefined) usage('contact consent needs --identity, --topic and --status');
      ctx.print(await ctx.client.call('PUT', `${orgPath(slug!)}/contacts/consent`, { identity: opts.identity, topic: opts.topic, status: opts.status }));
    },
  },
  {
    name: 'contact erase',
    args: ['<slug>'],
    options: ['identity', 'suppress', 'wait'],
    operations: ['eraseContact', 'getErasure'],
    summary: 'every row of the contact, for good; --suppress keeps its future events out; --wait prints the receipt once done',
    example: 'audiencectl contact erase acme --identity email:ada@example.com --wait',
    async run(ctx, [slug]) {
      const { opts } = ctx;
      if (opts.identity === undefined) usage('contact erase needs --identity email:<address> (or email-hash:, user_id:)');
      const receipt = (await ctx.client.call('POST', `${orgPath(slug!)}/contacts/erase`, { identity: opts.identity, ...(opts.suppress ? { suppress: true } : {}) })) as { id: string };
      if (!opts.wait) return ctx.print(receipt);
      for (;;) {
        const now = (await ctx.client.call('GET', `${orgPath(slug!)}/erasures/${seg(receipt.id)}`)) as { status: string };
        if (now.status === 'done') return ctx.print(now);
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    },
  },
];
