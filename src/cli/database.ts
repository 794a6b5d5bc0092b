import { setFlagsFromString } from 'node:v8';
import type { Config } from '../config.ts';
import { createLogger } from '../logger.ts';
import { openDatabase } from '../store/open-database.ts';
import { connect, type Db } from '../store/db.ts';
import { migrate } from '../store/migrate.ts';
import { CliError } from './errors.ts';

/** Where a database URL points, for a message: host, port, database and user, never the password. */
function describeUrl(url: string): { where: string; database: string; user: string; host: string; port: string } {
  const parsed = URL.canParse(url) ? new URL(url) : null;
  const host = parsed?.hostname || 'localhost';
  const port = parsed?.port || '5432';
  const database = decodeURIComponent(parsed?.pathname.slice(1) ?? '') || 'postgres';
  const user = decodeURIComponent(parsed?.username ?? '') || 'postgres';
  return { where: `${host}:${port}`, database, user, host, port };
}

/** The error codes of pg (a SQLSTATE) or of Node's socket (ECONNREFUSED...) along the error and its causes. */
function codesOf(error: unknown): string[] {
  const codes: string[] = [];
  for (let e = error as { code?: unknown; cause?: unknown; errors?: unknown[] } | undefined, depth = 0; e && depth < 5; depth++) {
    if (typeof e.code === 'string') codes.push(e.code);
    for (const inner of e.errors ?? []) if (typeof (inner as { code?: unknown }).code === 'string') codes.push((inner as { code: string }).code);
    e = e.cause as typeof e;
  }
  return codes;
}

/**
 * One line that says why the database at `url` cannot be used and what to do, for the failures an
 * operator meets (not running, no such host, no such database, refused credentials); null for others.
 */
export function explainDatabaseError(error: unknown, url: string): string | null {
  const { where, database, user, host, port } = describeUrl(url);
  const codes = codesOf(error);
  const has = (...wanted: string[]) => wanted.some((code) => codes.includes(code));
  const fix = 'or set DATABASE_URL to the right one (docs/configuration.md#database-connections)';
  if (has('ECONNREFUSED', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET')) {
    return `cannot reach PostgreSQL at ${where} (${codes.find((c) => c.startsWith('E'))}) for database ${database}: start PostgreSQL there, ${fix}`;
  }
  if (has('ENOTFOUND', 'EAI_AGAIN')) return `cannot resolve the database host ${host} (database ${database}): check the host name, ${fix}`;
  if (has('3D000')) {
    return `database ${database} does not exist on ${where}: create it (createdb -h ${host} -p ${port} -U ${user} ${database}), ${fix}`;
  }
  if (has('28P01', '28000'))
    return `PostgreSQL at ${where} refused user ${user} for database ${database}: check the user and password in DATABASE_URL`;
  if ((error as Error | null)?.message?.includes('timeout exceeded when trying to connect')) {
    return `PostgreSQL at ${where} did not answer in time (database ${database}): check that it is up and reachable, ${fix}`;
  }
  return null;
}

/** Runs `work` on the database at `url`; a database that cannot be used becomes a one-line CliError. */
export async function explainingDatabaseErrors<T>(url: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    const explained = explainDatabaseError(error, url);
    throw explained === null ? error : new CliError(explained);
  }
}

/**
 * Runs `work` on the configured database (DATABASE_URL, or the embedded one), migrated first, as
 * the commands that need the database rather than the API do (`tenant`, `key create`).
 */
export async function withDatabase<T>(config: Config, work: (db: Db) => Promise<T>): Promise<T> {
  // Prisma's query compiler is WebAssembly, compiled at the first statement. A command runs a few,
  // so V8's baseline compiler alone: its optimising tier cost about 0.7 s of CPU a command, and the
  // process waited for it before exiting (docs/measurements.md#2026-11-29-session-34-the-suites-time).
  setFlagsFromString('--liftoff-only');
  const database = await openDatabase(config, createLogger(config, 'stderr'));
  try {
    await explainingDatabaseErrors(database.url, () => migrate(database.url));
    const { db, close } = connect(database.url, 2);
    try {
      return await work(db);
    } finally {
      await close();
    }
  } finally {
    await database.stop();
  }
}
