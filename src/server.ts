/**
 * Entry point: read config once, build the app, listen, shut down gracefully on SIGTERM/SIGINT. An
 * uncaught error is logged as fatal and closes the service the same way (appends flushed, DuckDB closed)
 * before exiting 1; a close that outlasts SHUTDOWN_TIMEOUT_MS exits 1 anyway, so a supervisor's restart
 * is never blocked by a hung close.
 */
import { execFile } from 'node:child_process';
import type { Server } from 'node:http';
import type { FastifyBaseLogger } from 'fastify';
import { buildApp } from './app.js';
import { ConfigError, readConfig } from './core/config.js';
import { DataDirInUseError } from './core/data-dir-lock.js';
import { LogBehindError, LogUnavailableError } from './events/log/types.js';
import { ControlUnavailableError } from './control/types.js';
import { listenMetrics } from './ops/metrics-server.js';
import { stepsInProgress } from './roles/run-steps.js';
import { SERVICE_THREAD_POOL_SIZE, threadPoolHasAtLeast } from './core/threadpool.js';

async function main(): Promise<void> {
  if (!(await threadPoolHasAtLeast(SERVICE_THREAD_POOL_SIZE))) {
    stop(`libuv's thread pool has fewer than ${SERVICE_THREAD_POOL_SIZE} threads: UV_THREADPOOL_SIZE is set lower; unset it or set at least ${SERVICE_THREAD_POOL_SIZE}`);
  }
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
    if (error instanceof DataDirInUseError || error instanceof LogBehindError) stop(error.message);
    if (error instanceof LogUnavailableError || error instanceof ControlUnavailableError) {
      stop(`${error.message} (NATS_URL); start NATS or unset NATS_URL for the embedded log`);
    }
    throw error;
  });
  const { adminKey, eventLog: log } = app;
  // Where the key is (never the key): "generated" only on the start that wrote it.
  if (adminKey.file) app.log.info(adminKey.generated ? `admin key generated and stored in ${adminKey.file}` : `admin key read from ${adminKey.file}`);
  await app.listen({ port: config.port, host: config.host }).catch(async (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EADDRINUSE' && error.code !== 'EADDRNOTAVAIL') throw error;
    await app.close();
    stop(`cannot listen on ${config.host}:${config.port} (${error.code}); set PORT or HOST`);
  });
  app.log.info({ log: log?.kind ?? 'none', roles: config.roles, ...(log?.kind === 'jetstream' ? {} : { dataDir: config.dataDir }) }, 'audience is ready');
  notifySystemdReady(app.log);

  let metricsServer: Server | undefined;
  if (config.metricsPort !== undefined) {
    const port = config.metricsPort;
    metricsServer = await listenMetrics(app.metrics.registry, port, config.host).catch(async (error: NodeJS.ErrnoException) => {
      await app.close();
      stop(`cannot listen on ${config.host}:${port} for /metrics (${error.code}); set METRICS_PORT`);
    });
  }

  let closing = false;
  const shutdown = (reason: string, exitCode: number) => {
    if (closing) return;
    closing = true;
    const started = performance.now();
    app.log.info({ reason }, 'shutting down');
    // The last line: how long the close took and the exit status a supervisor will see.
    const exit = (code: number) => {
      app.log.info({ reason, durationMs: Math.round(performance.now() - started), exitCode: code }, 'stopped');
      process.exit(code);
    };
    setTimeout(() => {
      app.log.error({ timeoutMs: config.shutdownTimeoutMs, waitingFor: stepsInProgress() }, 'shutdown took longer than SHUTDOWN_TIMEOUT_MS; exiting');
      exit(1);
    }, config.shutdownTimeoutMs).unref();
    metricsServer?.close();
    app.close().then(
      () => exit(exitCode),
      (error) => {
        app.log.error({ err: error }, 'shutdown failed');
        exit(1);
      },
    );
  };
  process.on('SIGTERM', () => shutdown('SIGTERM', 0));
  process.on('SIGINT', () => shutdown('SIGINT', 0));
  const crash = (error: unknown) => {
    app.log.fatal({ err: error }, 'uncaught error; closing');
    shutdown('uncaught error', 1);
  };
  process.on('uncaughtException', crash);
  process.on('unhandledRejection', crash);
}

/**
 * systemd's Type=notify (deploy/systemd/audience.service): READY=1 once the service listens, so units
 * ordered after it start only then. systemd sets NOTIFY_SOCKET; Node cannot write to a Unix datagram
 * socket, so Debian's systemd-notify sends it for this pid (the unit allows it: NotifyAccess=all).
 */
function notifySystemdReady(log: FastifyBaseLogger): void {
  if (!process.env.NOTIFY_SOCKET) return;
  execFile('systemd-notify', ['--ready', `--pid=${process.pid}`], (error) => {
    if (error) log.warn({ err: error }, 'systemd readiness not sent: systemd-notify failed');
  });
}

function stop(message: string): never {
  console.error(`audience: ${message}`);
  process.exit(1);
}

await main();
