import { Prisma } from './prisma/client.ts';

/**
 * What the database's errors mean to the rest of grantd: the one place that knows SQLSTATEs,
 * Prisma's codes and the driver's messages. Callers ask what kind of failure an error is; the HTTP
 * layer only maps those kinds to problems.
 */

/** The SQLSTATE PostgreSQL answered a Prisma statement with, from its driver adapter's error. */
function sqlStateOf(error: unknown): string | undefined {
  const code = (error as { meta?: { driverAdapterError?: { cause?: { originalCode?: unknown } } } } | null)?.meta?.driverAdapterError?.cause
    ?.originalCode;
  return typeof code === 'string' ? code : undefined;
}

/** SQLSTATEs of a transaction rolled back for a deadlock (40P01) or a serialization failure (40001). */
const CONFLICT_SQLSTATES = new Set(['40P01', '40001']);

/**
 * Whether PostgreSQL aborted the statement's transaction for a conflict with another one: Prisma
 * says so with P2034, or carries the SQLSTATE of a raw statement in its driver adapter's error.
 */
export function isWriteConflict(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === 'P2034' || CONFLICT_SQLSTATES.has(sqlStateOf(error) ?? '');
}

/** Whether a create met a row with the same key (Prisma's P2002): the thing exists already. */
export const isUniqueViolation = (error: unknown): boolean => error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2002';

/** Whether a write named a row that does not exist (Prisma's P2003, a foreign key): the thing it refers to is gone. */
export const isForeignKeyViolation = (error: unknown): boolean => error instanceof Prisma.PrismaClientKnownRequestError && error.code === 'P2003';

/** SQLSTATE of a statement PostgreSQL cancelled: its time limit, or an operator's pg_cancel_backend. */
const CANCELLED = '57014';

/** Whether PostgreSQL cancelled a statement, as pg or Prisma reports it. */
export function isCancelled(error: unknown): boolean {
  return someCause(error, (e) => (sqlStateOf(e) ?? (e as { code?: unknown }).code) === CANCELLED);
}

/** Prisma's codes for an unreachable, closed, timed-out or overloaded database or transaction. */
const UNAVAILABLE_PRISMA_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'P2028']);
/** SQLSTATEs of connection failures (class 08), shutdowns (57P01-57P03) and exhaustion (53xxx). */
const UNAVAILABLE_SQLSTATE = /^(08|57P0[123]|53)/;
const UNAVAILABLE_MESSAGE =
  /not queryable|Connection terminated|connection error|timeout exceeded when trying to connect|Can't reach database|ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Query read timeout/i;

/**
 * Whether an error is how a database outage surfaces, from the driver, the pool or Prisma (whose
 * driver-adapter errors carry the SQLSTATE in `meta.driverAdapterError.cause`).
 */
function isUnavailable(error: unknown): boolean {
  return someCause(error, (e) => {
    const { code, name, message } = e as { code?: unknown; name?: string; message?: string };
    if (name === 'PrismaClientInitializationError') return true;
    const prismaCode = typeof code === 'string' ? code : '';
    const sqlState = sqlStateOf(e) ?? prismaCode;
    return UNAVAILABLE_PRISMA_CODES.has(prismaCode) || UNAVAILABLE_SQLSTATE.test(sqlState) || UNAVAILABLE_MESSAGE.test(message ?? '');
  });
}

/** What kind of failure of the database an error is, if it is one. */
export type StoreFailure = 'write-conflict' | 'cancelled' | 'unavailable';

export function storeFailureOf(error: unknown): StoreFailure | null {
  if (isWriteConflict(error)) return 'write-conflict';
  if (isCancelled(error)) return 'cancelled';
  if (isUnavailable(error)) return 'unavailable';
  return null;
}

/** Whether the error or one of its causes (a few deep) satisfies `test`. */
function someCause(error: unknown, test: (error: object) => boolean, depth = 0): boolean {
  if (!error || typeof error !== 'object' || depth > 4) return false;
  return test(error) || someCause((error as { cause?: unknown }).cause, test, depth + 1);
}
