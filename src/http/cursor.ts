import { createHmac } from 'node:crypto';
import { DomainError } from '../errors.ts';
import { digestsEqual } from '../auth/secrets.ts';

/**
 * Opaque keyset cursors: the position as base64url JSON, and an HMAC (with the tenant's cursor key)
 * over the position and the query it belongs to. A cursor replayed with another query, forged,
 * edited, or from another tenant fails verification and is answered with `invalid-cursor`.
 */
export function encodeCursor(key: Buffer, query: unknown, position: unknown): string {
  const payload = Buffer.from(JSON.stringify(position)).toString('base64url');
  return `${payload}.${sign(key, query, payload).toString('base64url')}`;
}

export function decodeCursor(key: Buffer, query: unknown, cursor: string): unknown {
  const dot = cursor.indexOf('.');
  const payload = cursor.slice(0, dot);
  // Compared as text, not as decoded bytes: Node's base64url decoder skips padding, spaces and
  // foreign characters, so only the exact string the server issued may pass.
  const signature = Buffer.from(cursor.slice(dot + 1));
  if (dot < 0 || !digestsEqual(signature, Buffer.from(sign(key, query, payload).toString('base64url')))) {
    throw new DomainError('invalid-cursor', 'the cursor was not issued for this query');
  }
  try {
    return JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    throw new DomainError('invalid-cursor', 'the cursor is malformed');
  }
}

const sign = (key: Buffer, query: unknown, payload: string): Buffer =>
  createHmac('sha256', key).update(JSON.stringify(query)).update('\n').update(payload).digest().subarray(0, 16);

/** The position a cursor holds, an array of `length` strings; null without a cursor (the first page). */
export function decodeStringTuple(key: Buffer, query: unknown, cursor: string | undefined, length: number): string[] | null {
  if (cursor === undefined) return null;
  const position = decodeCursor(key, query, cursor);
  if (!Array.isArray(position) || position.length !== length || !position.every((p) => typeof p === 'string')) {
    throw new DomainError('invalid-cursor', 'the cursor is malformed');
  }
  return position;
}

/** The next page's cursor: the position of this page's last item, or null when this page is the last. */
export function nextCursor(key: Buffer, query: unknown, more: boolean, lastPosition: string[] | undefined): string | null {
  return more && lastPosition !== undefined ? encodeCursor(key, query, lastPosition) : null;
}

/**
 * A keyset page from rows read with `limit + 1` (the extra row tells whether a next page exists):
 * its first `limit` rows, and the cursor to the next page.
 */
export function keysetPage<T>(
  key: Buffer,
  query: unknown,
  rows: T[],
  limit: number,
  positionOf: (row: T) => string[],
): { rows: T[]; next_cursor: string | null } {
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return { rows: page, next_cursor: nextCursor(key, query, rows.length > limit, last === undefined ? undefined : positionOf(last)) };
}
