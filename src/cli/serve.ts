import type { Server } from 'node:http';
import type { Config } from '../config.ts';
import { createApp } from '../http/app.ts';
import { problemBody } from '../http/problem.ts';
import { createLogger, createServices, openDatabase } from '../runtime.ts';
import { migrate } from '../store/migrate.ts';
import { countTenants, createTenant, type CreatedTenant } from '../store/tenants.ts';
import { printAdminKey } from './tenant.ts';

const SHUTDOWN_GRACE_MS = 10_000;

export async function serveCommand(config: Config): Promise<number> {
  const logger = createLogger(config);
  // Start, stop and migrations are always told (unless silenced), whatever level requests log at.
  const lifecycle = logger.level === 'silent' ? logger : logger.child({}, { level: 'info' });
  const database = await openDatabase(config, logger);
  const services = createServices(database.url, { poolSize: config.GRANTD_DB_POOL_SIZE, rateLimit: config.GRANTD_RATE_LIMIT, graphMemory: config.GRANTD_GRAPH_MEMORY }, logger);
  let bootstrapped: CreatedTenant | null = null;
  const applied = await migrate(database.url, async () => {
    // Under the migration lock, so that nodes starting together on an empty database make one tenant.
    if ((await countTenants(services.db)) === 0) bootstrapped = await createTenant(services.db, 'default');
  });
  if (applied.length > 0) lifecycle.info({ migrations: applied }, 'applied migrations');
  if (bootstrapped) printAdminKey(bootstrapped, (text) => process.stderr.write(text));

  const app = createApp(services);
  const server: Server = await new Promise((resolve) => {
    const listening = app.listen(config.PORT, config.HOST, () => resolve(listening));
  });
  // Requests Node's parser refuses (oversized headers, malformed HTTP) never reach Express: answer them as problems too.
  server.on('clientError', (error: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return socket.destroy();
    const tooLarge = error.code === 'HPE_HEADER_OVERFLOW';
    const status = tooLarge ? 431 : 400;
    const detail = tooLarge ? 'the request line and headers exceed 16 KiB' : 'malformed HTTP request';
    const body = JSON.stringify({ ...problemBody('invalid-request', detail), status });
    socket.end(
      `HTTP/1.1 ${status} ${tooLarge ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/problem+json\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : config.PORT;
  lifecycle.info({ port, host: config.HOST, database: database.embedded ? 'embedded' : 'external' }, 'grantd listening');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    lifecycle.info({ signal }, 'shutting down');
    const forced = setTimeout(() => server.closeAllConnections(), SHUTDOWN_GRACE_MS);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeIdleConnections();
    });
    clearTimeout(forced);
    await services.close();
    await database.stop();
    lifecycle.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
  return 0;
}
