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
import { createLogger } from '../logger.ts';
import { createServices } from '../runtime.ts';
import { openDatabase, type OpenDatabase } from '../store/open-database.ts';
import { startTracingFromEnv, type StopTracing } from '../tracing.ts';
import { connect } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { createTenantWithConsoleClient, findConsoleClientId } from '../store/oauth-clients.ts';
import { countTenants, type CreatedTenant } from '../store/tenants.ts';
import { explainingDatabaseErrors } from './database.ts';
import { OIDC_PROVIDER_RUNTIME_WARNING, withoutWarning } from './quiet.ts';
import { printAdminKey } from './tenant.ts';

/**
 * On SIGTERM or SIGINT, requests under way have REQUEST_GRACE_MS to finish; the server and the pools
 * are given up on at CLOSED_BY_MS, so that the embedded database is stopped in any case; and the
 * process exits at SHUTDOWN_LIMIT_MS whatever is left (docs/configuration.md#timeouts-connections-and-shutdown).
 */
const REQUEST_GRACE_MS = 7_000;
const CLOSED_BY_MS = 8_500;
export const SHUTDOWN_LIMIT_MS = 10_000;

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
  tellAboutTheRuntime(lifecycle);
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
    const stop = stopOnSignal(lifecycle, async () => {
      await closingWithin(CLOSED_BY_MS, lifecycle, async () => {
        await closeServer(server);
        await services.close();
      });
      await database.stop();
    });
    watchDatabase(database, lifecycle, stop);
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
  const stop = stopOnSignal(lifecycle, async () => {
    await primary.stop();
    await database.stop();
  });
  watchDatabase(database, lifecycle, stop);
  return 0;
}

/** The embedded database restarted when it exits; when it keeps exiting, grantd stops, saying why, and exits 1. */
function watchDatabase(database: OpenDatabase, lifecycle: Logger, stop: (cause: string, exitCode?: number) => Promise<void>): void {
  database.watch((reason) => {
    lifecycle.error(reason);
    void stop('the embedded database', 1);
  });
}

/**
 * oidc-provider warns "Unsupported runtime" on a Node.js older than 22 LTS ("Jod") or not an LTS
 * release, as it tells them apart, though it works on Node.js 20 (docs/development.md#nodejs):
 * listen() drops that one warning of the library in every process, and grantd says it once in its
 * own words.
 */
function tellAboutTheRuntime(lifecycle: Logger): void {
  if ((process.release.lts ?? '') >= 'Jod') return;
  lifecycle.info(
    `on Node.js ${process.versions.node}: its OAuth library (oidc-provider) names Node.js 22 LTS or a later LTS as supported, and works on Node.js 20 too (docs/development.md#nodejs)`,
  );
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
  const stop = stopOnSignal(logger, () =>
    closingWithin(CLOSED_BY_MS, logger, async () => {
      await closeServer(server);
      await services.close();
    }),
  );
  // The primary is gone (killed): nobody relays this worker's writes any more.
  process.on('disconnect', () => void stop('disconnect'));
  return 0;
}

/** Where the console's sign-in returns: its redirect URI, under GRANTD_PUBLIC_URL (docs/console.md). */
const consoleCallback = (config: Config): string => `${publicUrl(config)}/console/callback`;

/**
 * Applies pending migrations and, on an empty database, creates tenant `default` with the console's
 * OAuth client for it (one transaction) and prints its admin key once, so that the console works
 * from the first start with no other step. Resolves to that client's id, if tenant `default` still has it.
 */
async function prepareDatabase(url: string, lifecycle: Logger, callback: string): Promise<string | null> {
  const { db, close } = connect(url, 1);
  try {
    let bootstrapped: CreatedTenant | null = null;
    const applied = await explainingDatabaseErrors(url, () =>
      migrate(url, async () => {
        // Under the migration lock, so that nodes starting together on an empty database make one tenant.
        if ((await countTenants(db)) > 0) return;
        bootstrapped = await createTenantWithConsoleClient(db, 'default', callback);
      }),
    );
    if (applied.length > 0) {
      const count = applied.length === 1 ? 'one migration' : `${applied.length} migrations`;
      lifecycle.info({ migrations: applied.length, latest: applied.at(-1) }, `applied ${count} to the database`);
    }
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
  await withoutWarning(OIDC_PROVIDER_RUNTIME_WARNING, () => import('../auth/oauth/provider.ts'));
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
  const forced = setTimeout(() => server.closeAllConnections(), REQUEST_GRACE_MS);
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
  clearTimeout(forced);
}

/** Runs `work`, but waits for it at most until `ms` after the shutdown began: what is left of it is given up. */
async function closingWithin(ms: number, logger: Logger, work: () => Promise<void>): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), ms - (Date.now() - shutdownBegan))));
  const outcome = await Promise.race([work(), late]);
  clearTimeout(timer);
  if (outcome === 'late') logger.warn(`the server and the database pools were not closed within ${ms / 1000} s; stopping without them`);
}

/** When the shutdown began (Date.now()), from which its steps count their time. */
let shutdownBegan = 0;

/**
 * Runs `stop` once on SIGTERM or SIGINT, then exits (with `exitCode`, or 1 when `stop` has not
 * ended within SHUTDOWN_LIMIT_MS); returns the same trigger for other causes.
 */
function stopOnSignal(logger: Logger, stop: () => Promise<void>): (cause: string, exitCode?: number) => Promise<void> {
  let stopping = false;
  const shutdown = async (cause: string, exitCode = 0) => {
    if (stopping) return;
    stopping = true;
    shutdownBegan = Date.now();
    logger.info({ signal: cause }, 'shutting down');
    setTimeout(() => {
      logger.error(`not stopped within ${SHUTDOWN_LIMIT_MS / 1000} s: exiting now`);
      process.exit(1);
    }, SHUTDOWN_LIMIT_MS);
    await stop();
    await stopTracing?.();
    logger.info('stopped');
    process.exit(exitCode);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return shutdown;
}
