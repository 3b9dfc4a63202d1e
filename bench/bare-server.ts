/**
 * The baseline for bench/run.ts: a bare Fastify app (same fastify version as the service, logger off)
 * whose POST /bare lets Fastify parse the JSON body and answers {ok:true}, doing nothing else.
 * Runs as its own process: PORT and HOST from the environment.
 */
import Fastify from 'fastify';

const app = Fastify({ logger: false });

app.post('/bare', async (request) => {
  // The body is parsed by Fastify's default JSON parser before the handler runs; touch it so the
  // handler is not trivially different from one that reads it.
  return { ok: request.body !== undefined };
});

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
