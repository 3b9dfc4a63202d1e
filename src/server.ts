/** Entry point: read config once, build the app, listen, shut down gracefully on SIGTERM/SIGINT. */
import './threadpool.js';
import { buildApp } from './app.js';
import { ConfigError, readConfig } from './config.js';
import { DataDirInUseError } from './data-dir-lock.js';
import { LogUnavailableError } from './log/types.js';
import { ControlUnavailableError } from './control/types.js';

async function main(): Promise<void> {
  let config;
  try {
    config = readConfig(process.env);
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(`audience: ${error.message}`);
      process.exit(1);
    }
    throw error;
  }
  const app = await buildApp(config).catch((error: unknown) => {
    // An operator's mistake, not a bug: say what is wrong in one line, without a stack.
    if (error instanceof DataDirInUseError) stop(error.message);
    if (error instanceof LogUnavailableError || error instanceof ControlUnavailableError) {
      stop(`${error.message} (NATS_URL); start NATS or unset NATS_URL for the embedded log`);
    }
    throw error;
  });
  const { adminKey, log } = app.audience;
  if (adminKey.file) app.log.info(`admin key ${adminKey.generated ? 'generated and ' : ''}stored in ${adminKey.file}`);
  await app.listen({ port: config.port, host: config.host }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE' && error.code !== 'EADDRNOTAVAIL') throw error;
    await app.close();
    stop(`cannot listen on ${config.host}:${config.port} (${error.code}); set PORT or HOST`);
  });
  app.log.info({ log: log?.kind ?? 'none', roles: config.roles, ...(log?.kind === 'jetstream' ? {} : { dataDir: config.dataDir }) }, 'audience is ready');

  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    app.close().then(
      () => process.exit(0),
      (error) => {
        app.log.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGINT', () => shutdown('SIGINT'));
}

function stop(message: string): never {
  console.error(`audience: ${message}`);
  process.exit(1);
}

await main();
