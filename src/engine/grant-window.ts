/**
 * A grant's window (docs/model.md#time-bound-grants), in epoch milliseconds of the server's clock:
 * in force from `notBefore` on (inclusive) and before `expiresAt` (exclusive); null: open on that side.
 */
export interface GrantWindow {
  notBefore: number | null;
  expiresAt: number | null;
}

/** The clock that decides which grants are in force: epoch milliseconds (Date by default; tests move a fake one). */
export interface WallClock {
  now(): number;
}

/** Date's clock, read through the global at each call (so that a test's fake Date is the one read). */
export const SYSTEM_CLOCK: WallClock = { now: () => Date.now() };

/** Where the instant `at` stands against a window: before it opens, inside it, or from its end on. */
export type WindowState = 'not-yet-valid' | 'in-force' | 'expired';

export function windowState(window: GrantWindow | null, at: number): WindowState {
  if (window?.notBefore != null && at < window.notBefore) return 'not-yet-valid';
  if (window?.expiresAt != null && at >= window.expiresAt) return 'expired';
  return 'in-force';
}

export const inForce = (window: GrantWindow | null, at: number): boolean => windowState(window, at) === 'in-force';

export const sameWindow = (a: GrantWindow | null, b: GrantWindow | null): boolean =>
  a === b || (a !== null && b !== null && a.notBefore === b.notBefore && a.expiresAt === b.expiresAt);

/** The window of a grant with these times, or null for a grant in force for as long as it exists. */
export const windowOf = (notBefore: number | null, expiresAt: number | null): GrantWindow | null =>
  notBefore === null && expiresAt === null ? null : { notBefore, expiresAt };

/** The window fields of a grant as written (the contract's GrantWriteSchema). */
export interface WindowInput {
  not_before?: string | null | undefined;
  expires_at?: string | null | undefined;
}

export interface WindowProblem {
  path: string;
  message: string;
}

/**
 * The window a grant is written with, read from ISO 8601 UTC timestamps, or the problems of its
 * fields, each named `${prefix}not_before` or `${prefix}expires_at`: a malformed time, an
 * `expires_at` not after `now` (it would never be in force), or not after `not_before`.
 */
export function readWindow(input: WindowInput, now: number, prefix: string): { window: GrantWindow | null; problems: WindowProblem[] } {
  const problems: WindowProblem[] = [];
  const read = (field: 'not_before' | 'expires_at'): number | null => {
    const value = input[field];
    if (value === null || value === undefined) return null;
    const ms = utcMillis(value);
    if (ms === null) problems.push({ path: prefix + field, message: 'must be an ISO 8601 UTC timestamp, e.g. 2026-12-31T23:59:59Z' });
    return ms;
  };
  const notBefore = read('not_before');
  const expiresAt = read('expires_at');
  if (expiresAt !== null && expiresAt <= now) problems.push({ path: `${prefix}expires_at`, message: 'must be in the future' });
  else if (expiresAt !== null && notBefore !== null && expiresAt <= notBefore) {
    problems.push({ path: `${prefix}expires_at`, message: 'must be after not_before' });
  }
  return { window: problems.length > 0 ? null : windowOf(notBefore, expiresAt), problems };
}

/** `YYYY-MM-DDTHH:MM:SS[.fraction]Z` of a real date from year 1 on, in epoch ms (a finer fraction is cut to the ms); else null. */
function utcMillis(value: string): number | null {
  if (!ISO_UTC.test(value)) return null;
  const ms = Date.parse(value);
  // Date.parse rolls 2026-02-30 over into March; PostgreSQL has no year 0.
  if (Number.isNaN(ms) || value.startsWith('0000') || new Date(ms).toISOString().slice(0, 19) !== value.slice(0, 19)) return null;
  return ms;
}

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
