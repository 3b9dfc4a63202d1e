/**
 * The baseline for bench/run.ts: a bare Fastify app (same fastify version as the service, logger off)
 * whose POST /bare lets Fastify parse the JSON body and answers {ok:true}, doing nothing else, and whose
 * GET /bare-contact answers a constant contact shaped like GET /audience/v2/contacts's (bench/audience.ts).
 * With BARE_PARTNER_ID set it also serves issue 39's bare equivalents (bench/fair-bare.ts).
 * Runs as its own process: PORT and HOST from the environment.
 */
import Fastify from 'fastify';
import { contactAnswer } from './contacts.js';
import { registerFairBareRoutes } from './fair-bare.js';

const app = Fastify({ logger: false });

// Issue 39's bare equivalents (bench/fair-bare.ts), when the bench hands over the org's credentials.
if (process.env.BARE_PARTNER_ID) {
  await registerFairBareRoutes(app, {
    partnerId: process.env.BARE_PARTNER_ID,
    partnerSecretSha256: process.env.BARE_PARTNER_SECRET_SHA256 ?? '',
    tokenSha256: process.env.BARE_TOKEN_SHA256 ?? '',
    logFile: process.env.BARE_LOG_FILE ?? 'bare-events.jsonl',
    contacts: Number(process.env.BARE_CONTACTS ?? 0),
    schemasDir: process.env.BARE_SCHEMAS_DIR ?? 'schemas',
  });
}

app.post('/bare', async (request) => {
  // The body is parsed by Fastify's default JSON parser before the handler runs; touch it so the
  // handler is not trivially different from one that reads it.
  return { ok: request.body !== undefined };
});

/** A constant contact of the Audience API's shape and a typical size (bench/audience.ts prints both sizes). */
const CONTACT = contactAnswer({
  email: 'grace.hopper.42042@mail.example.net',
  firstName: 'Grace',
  lastName: 'Hopper',
  userId: 'usr_0000wx',
  city: 'Lisbon',
  state: 'Lisboa',
  country: 'PT',
});

// The query string (identity=…) is parsed by Fastify as for the real route, and ignored.
app.get('/bare-contact', async () => CONTACT);

app.get('/healthz', async () => ({ status: 'ok' }));

await app.listen({ port: Number(process.env.PORT ?? 18090), host: process.env.HOST || '127.0.0.1' });

const shutdown = () => {
  app.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
};
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
