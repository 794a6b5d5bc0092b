// How the client's arguments become the parts of a request the API takes: path segments, the
// Grantd-Consistency header, and a grant's window bounds.
import type { Consistency, GrantInput, RequestBody, Routes, WindowBound } from './types.ts';

/**
 * A path parameter, percent-encoded (ts-rest inserts parameters as they are). An empty value, `.` or
 * `..` cannot be sent as a path segment (it would name another route), so it is refused.
 */
export function pathParam(name: string, value: string): string {
  if (typeof value !== 'string' || value === '' || value === '.' || value === '..') {
    throw new TypeError(`${name} must be a non-empty string other than "." and "..", got ${JSON.stringify(value)}`);
  }
  return encodeURIComponent(value);
}

/** The Grantd-Consistency header a consistency asks for. */
export function consistencyHeader(consistency: Consistency): string {
  if (consistency === 'full') return 'full';
  if (typeof consistency?.atLeast !== 'string' || consistency.atLeast === '') {
    throw new TypeError("consistency must be 'full' or { atLeast: <revision> }");
  }
  return `at-least ${consistency.atLeast}`;
}

/** The grant with its Date bounds as the ISO 8601 UTC strings the API takes. */
export function withIsoTimes(input: GrantInput): RequestBody<Routes['grants']['create']> {
  const { not_before, expires_at, ...triple } = input;
  const iso = (bound: WindowBound) => (bound instanceof Date ? bound.toISOString() : bound);
  return {
    ...triple,
    ...(not_before !== undefined ? { not_before: iso(not_before) } : {}),
    ...(expires_at !== undefined ? { expires_at: iso(expires_at) } : {}),
  };
}
