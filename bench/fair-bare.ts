/**
 * The bare equivalents of issue 39: a Fastify route that does the least work the service's path must do,
 * so that a ratio near 1 is reachable and a ratio far from it is the service's own cost.
 *   POST /bare/collect   the body validated by ajv against schemas/event.schema.json (the service's own
 *                        schema, so the same shape), the partner secret's SHA-256 compared in constant time,
 *                        the JSON appended to a file, answered after a group fdatasync
 *   POST /bare/batch     the same for a batch: the envelope and each member validated, one group write
 *   GET  /bare/contacts  the bearer token's SHA-256 looked up in a set, a Map get of a prebuilt Buffer
 *                        answer (bench/contacts.ts's contacts, by e-mail, e-mail hash or user id), the
 *                        service's headers (Request-Id, RateLimit-Policy, RateLimit, content type)
 *   POST /bare/contacts/batch  the same token check; the body's identities checked (1 to 100 strings, none
 *                        twice); per identity a Map get of a prebuilt entry, appended to one string in the
 *                        service's answer shape (identity, status, contact, meta) — issue 41's batch
 * Registered by bench/bare-server.ts when BARE_PARTNER_ID is set (with BARE_PARTNER_SECRET_SHA256,
 * BARE_TOKEN_SHA256, BARE_LOG_FILE and BARE_CONTACTS).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { type FileHandle, open } from 'node:fs/promises';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { FastifyInstance } from 'fastify';
import { contactAnswer, emailHash, syntheticContacts } from './contacts.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;
const BASE = 'https://audience.dev/schemas/';

export interface FairBareOptions {
  partnerId: string;
  /** Hex SHA-256 of the partner secret. */
  partnerSecretSha256: string;
  /** Hex SHA-256 of the Audience API token. */
  tokenSha256: string;
  logFile: string;
  contacts: number;
  schemasDir: string;
}

/** Appends lines and resolves each append once an fdatasync after it has returned: one sync for all waiting. */
class GroupWriter {
  private pending: Buffer[] = [];
  private waiting: Array<() => void> = [];
  private writing = false;

  constructor(private readonly file: FileHandle) {}

  append(bytes: Buffer): Promise<void> {
    return new Promise((resolve) => {
      this.pending.push(bytes);
      this.waiting.push(resolve);
      if (!this.writing) void this.flush();
    });
  }

  private async flush(): Promise<void> {
    this.writing = true;
    while (this.pending.length > 0) {
      const bytes = Buffer.concat(this.pending);
      const done = this.waiting;
      this.pending = [];
      this.waiting = [];
      await this.file.write(bytes);
      await this.file.datasync();
      for (const resolve of done) resolve();
    }
    this.writing = false;
  }
}

export async function registerFairBareRoutes(app: FastifyInstance, options: FairBareOptions): Promise<void> {
  const ajv = new Ajv2020({ strict: true, allErrors: true, discriminator: true });
  addFormats(ajv);
  for (const file of readdirSync(options.schemasDir).filter((f) => f.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(readFileSync(join(options.schemasDir, file), 'utf8')));
  }
  const validate = (id: string) => ajv.getSchema(BASE + id)!;
  const eventValid = validate('event.schema.json');
  const envelopeValid = validate('batch.schema.json#/$defs/envelope');
  const memberValid = validate('event.schema.json#/$defs/batchMember');

  const secretHash = Buffer.from(options.partnerSecretSha256, 'hex');
  const authentic = (body: { partnerId?: unknown; partnerSecret?: unknown }) =>
    body.partnerId === options.partnerId &&
    typeof body.partnerSecret === 'string' &&
    timingSafeEqual(createHash('sha256').update(body.partnerSecret).digest(), secretHash);

  const file = await open(options.logFile, 'a');
  const writer = new GroupWriter(file);
  app.addHook('onClose', () => file.close());

  app.post('/bare/collect', async (request, reply) => {
    const body = request.body as { partnerId?: unknown; partnerSecret?: unknown; messageId?: string };
    if (!eventValid(body)) return reply.code(400).send({ code: 'schema_violation' });
    if (!authentic(body)) return reply.code(401).send({ code: 'invalid_credentials' });
    await writer.append(Buffer.from(`${JSON.stringify(body)}\n`));
    return { messageId: body.messageId };
  });

  app.post('/bare/batch', async (request, reply) => {
    const body = request.body as { partnerId?: unknown; partnerSecret?: unknown; batch: Array<{ messageId?: string }> };
    if (!envelopeValid(body)) return reply.code(400).send({ code: 'schema_violation' });
    if (!authentic(body)) return reply.code(401).send({ code: 'invalid_credentials' });
    let lines = '';
    for (const member of body.batch) {
      if (!memberValid(member)) return reply.code(400).send({ code: 'schema_violation' });
      lines += `${JSON.stringify(member)}\n`;
    }
    await writer.append(Buffer.from(lines));
    return { messageIds: body.batch.map((m) => m.messageId) };
  });

  // The answers, and a batch entry's middle (the meta's tail is per request), built before the first
  // request, keyed by the identity as the query names it.
  const answers = new Map<string, Buffer>();
  const found = new Map<string, string>();
  for (const c of syntheticContacts(options.contacts)) {
    const whole = contactAnswer(c);
    const answer = Buffer.from(JSON.stringify(whole));
    const entry = `"status":"found","contact":${JSON.stringify(whole.contact)},"meta":{"eventsThrough":null`;
    for (const identity of [`email:${c.email}`, `email-hash:${emailHash(c.email)}`, `user_id:${c.userId}`]) {
      answers.set(identity, answer);
      found.set(identity, entry);
    }
  }
  const tokens = new Set([options.tokenSha256]);
  let requests = 0;
  app.get('/bare/contacts', async (request, reply) => {
    const token = request.headers.authorization?.slice('Bearer '.length) ?? '';
    if (!tokens.has(createHash('sha256').update(token).digest('hex'))) return reply.code(401).send({ code: 'invalid_token' });
    const answer = answers.get((request.query as { identity?: string }).identity ?? '');
    reply.header('Request-Id', `req-${(++requests).toString(36)}`);
    reply.header('RateLimit-Policy', '"org";q=100000;w=1');
    reply.header('RateLimit', '"org";r=99999;t=1');
    if (!answer) return reply.code(404).send({ code: 'contact_not_found' });
    return reply.type('application/json; charset=utf-8').send(answer);
  });

  app.post('/bare/contacts/batch', async (request, reply) => {
    const token = request.headers.authorization?.slice('Bearer '.length) ?? '';
    if (!tokens.has(createHash('sha256').update(token).digest('hex'))) return reply.code(401).send({ code: 'invalid_token' });
    const { identities } = request.body as { identities?: unknown };
    // What the service must refuse: not a list of 1 to 100 strings, or one twice.
    if (!Array.isArray(identities) || identities.length === 0 || identities.length > 100) return reply.code(400).send({ code: 'invalid_request' });
    if (!identities.every((i) => typeof i === 'string') || new Set(identities).size !== identities.length) return reply.code(400).send({ code: 'invalid_request' });
    reply.header('Request-Id', `req-${(++requests).toString(36)}`);
    reply.header('RateLimit-Policy', '"org";q=100000;w=1');
    reply.header('RateLimit', '"org";r=99999;t=1');
    const tail = `,"computedAt":"${new Date().toISOString()}","lagMs":0}`;
    let answer = '{"status":"success","contacts":[';
    for (const [i, identity] of (identities as string[]).entries()) {
      const entry = found.get(identity);
      answer += `${i === 0 ? '' : ','}{"identity":${JSON.stringify(identity)},${entry === undefined ? '"status":"not_found"}' : `${entry}${tail}}`}`;
    }
    return reply.type('application/json; charset=utf-8').send(`${answer}]}`);
  });
}
