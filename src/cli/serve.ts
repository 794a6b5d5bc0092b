import cluster from 'node:cluster';
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import { forgetBefore } from '../cluster/changes.ts';
import { Primary } from '../cluster/primary.ts';
import { PrimaryLink, shareMetrics } from '../cluster/worker.ts';
import { ConfigError, publicUrl, type Config } from '../config.ts';
import { createApp } from '../http/app.ts';
import type { AppDeps } from '../http/context.ts';
import { httpOptions } from '../http/options.ts';
import { createHttpServer } from '../http/server.ts';
import { createLogger, createServices, openDatabase } from '../runtime.ts';
import { startTracingFromEnv, type StopTracing } from '../tracing.ts';
import { connect } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createConsoleClient, findConsoleClientId } from '../store/oauth-clients.ts';
import { countTenants, createTenant, type CreatedTenant } from '../store/tenants.ts';
import { explainingDatabaseErrors } from './database.ts';
import { printAdminKey } from './tenant.ts';

const SHUTDOWN_GRACE_MS = 10_000;

/** Sends the spans still buffered, at shutdown; undefined when traces are off (docs/configuration.md#traces). */
let stopTracing: StopTracing | undefined;

/**
 * `grantd serve`: opens the database (embedded unless DATABASE_URL), migrates it, then serves the
 * API from this process, or with GRANTD_WORKERS > 1 from that many workers sharing the port.
 */
export async function serveCommand(config: Config): Promise<number> {
  // Before the app is built: it traces requests only when tracing is on.
  stopTracing = await startTracingFromEnv();
  if (cluster.isWorker) return serveWorker(config);
  const logger = createLogger(config);
  // Start, stop and migrations are always told (unless silenced), whatever level requests log at.
  const lifecycle = logger.level === 'silent' ? logger : logger.child({}, { level: 'info' });
  const database = await openDatabase(config, logger);
  const consoleClientId = await prepareDatabase(database.url, lifecycle, consoleCallback(config));
  const listening = { host: config.HOST, database: database.embedded ? 'embedded' : 'external', workers: config.GRANTD_WORKERS };

  if (config.GRANTD_WORKERS === 1) {
    const services = createServices(database.url, config, logger);
    const server = await listen(services, config).catch(async (error: unknown) => {
      await services.close();
      await database.stop();
      throw error;
    });
    lifecycle.info({ port: portOf(server, config), ...listening }, 'grantd listening');
    tellWhereToGo(config, portOf(server, config), consoleClientId);
    stopOnSignal(lifecycle, async () => {
      await closeServer(server);
      await services.close();
      await database.stop();
    });
    return 0;
  }

  const primary = new Primary({ workers: config.GRANTD_WORKERS, env: { DATABASE_URL: database.url } }, lifecycle);
  let port: number;
  try {
    port = await primary.start();
  } catch (error) {
    await database.stop();
    throw error;
  }
  lifecycle.info({ port, ...listening }, 'grantd listening');
  tellWhereToGo(config, port, consoleClientId);
  stopOnSignal(lifecycle, async () => {
    await primary.stop();
    await database.stop();
  });
  return 0;
}

/** A worker of a cluster: the database is its primary's, already migrated. */
async function serveWorker(config: Config): Promise<number> {
  const logger = createLogger(config).child({ worker: cluster.worker!.id });
  const link = new PrimaryLink((change) => forgetBefore(services, change));
  const services = createServices(config.DATABASE_URL!, config, logger, link);
  shareMetrics(services.metrics.registry);
  const server = await listen(services, config).catch(async (error: unknown) => {
    await services.close();
    process.disconnect?.(); // the link to the primary would keep this process alive
    throw error;
  });
  const stop = stopOnSignal(logger, async () => {
    await closeServer(server);
    await services.close();
  });
  // The primary is gone (killed): nobody relays this worker's writes any more.
  process.on('disconnect', () => void stop('disconnect'));
  return 0;
}

/** Where the console's sign-in returns: its redirect URI, under GRANTD_PUBLIC_URL (docs/console.md). */
const consoleCallback = (config: Config): string => `${publicUrl(config)}/console/callback`;

/**
 * Applies pending migrations and, on an empty database, creates tenant `default`, prints its admin
 * key once, and makes the console's OAuth client for it, so that the console works from the first
 * start with no other step. Resolves to that client's id, if tenant `default` still has it.
 */
async function prepareDatabase(url: string, lifecycle: Logger, callback: string): Promise<string | null> {
  const { db, close } = connect(url, 1);
  try {
    let bootstrapped: CreatedTenant | null = null;
    const applied = await explainingDatabaseErrors(url, () =>
      migrate(url, async () => {
        // Under the migration lock, so that nodes starting together on an empty database make one tenant.
        if ((await countTenants(db)) > 0) return;
        const created = await createTenant(db, 'default');
        await createConsoleClient(db, created.tenant.id, created.key.id, callback);
        bootstrapped = created;
      }),
    );
    if (applied.length > 0) lifecycle.info({ migrations: applied }, 'applied migrations');
    if (bootstrapped) printAdminKey(bootstrapped, (text) => process.stderr.write(text));
    return await findConsoleClientId(db, callback);
  } finally {
    await close();
  }
}

/**
 * Serves the API of `services` on HOST:PORT within the configured timeouts and connection cap; an
 * address in use or refused is told as such (Express's app.listen took it for success).
 */
async function listen(services: AppDeps, config: Config): Promise<Server> {
  // The OAuth library is compiled before the node listens, not by the first OAuth request: that takes
  // about 80 ms of the event loop, which would stall every tenant's requests then (docs/decisions.md#one-meter-for-all-work-in-memory).
  await import('../auth/oauth/provider.ts');
  const options = httpOptions(config);
  const server = createHttpServer(createApp(services, options), options);
  services.metrics.countDrops(server);
  await new Promise<void>((resolve, reject) => {
    const refused = (error: NodeJS.ErrnoException) =>
      reject(new ConfigError(`cannot listen on ${config.HOST}:${config.PORT}: ${error.code ?? error.message}`));
    server.once('error', refused);
    server.listen(config.PORT, config.HOST, () => {
      server.off('error', refused);
      resolve();
    });
  });
  return server;
}

/**
 * One line for people on standard error, beside the JSON log line for machines: where the API, its
 * reference and the console are (an address that listens everywhere is reached as localhost). The
 * console is at GRANTD_PUBLIC_URL, where its sign-in returns, with tenant `default`'s console client
 * when there is one.
 */
function tellWhereToGo(config: Config, port: number, consoleClientId: string | null): void {
  if (config.LOG_LEVEL === 'silent') return;
  const everywhere = ['0.0.0.0', '::', ''].includes(config.HOST);
  const host = everywhere ? 'localhost' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
  const base = `http://${host}:${port}`;
  const consoleUrl = `${config.GRANTD_PUBLIC_URL ?? `http://localhost:${port}`}/console/${consoleClientId ? `?client_id=${consoleClientId}` : ''}`;
  process.stderr.write(`grantd is ready: the API at ${base}/v1, its reference at ${base}/docs, the console at ${consoleUrl}\n`);
}

const portOf = (server: Server, config: Config): number => {
  const address = server.address();
  return typeof address === 'object' && address ? address.port : config.PORT;
};

/** Lets requests under way finish (for at most the grace period) and stops accepting new ones. */
async function closeServer(server: Server): Promise<void> {
  const forced = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  clearTimeout(forced);
}

/** Runs `stop` once on SIGTERM or SIGINT, then exits; returns the same trigger for other causes. */
function stopOnSignal(logger: Logger, stop: () => Promise<void>): (cause: string) => Promise<void> {
  let stopping = false;
  const shutdown = async (cause: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal: cause }, 'shutting down');
    await stop();
    await stopTracing?.();
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return shutdown;
}
