import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { decodeCursor, decodeStringTuple, encodeCursor, keysetPage } from '../../src/http/cursor.ts';
import { DomainError } from '../../src/errors.ts';

const key = randomBytes(32);
const query = { namespace: 'document', subject: 'user:alice' };
const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
const cursor = encodeCursor(key, query, ['q3', 'viewer']);

const refusal = (given: string) => {
  try {
    decodeCursor(key, query, given);
  } catch (error) {
    return error instanceof DomainError ? error.type : error;
  }
  return 'accepted';
};

describe('cursors', () => {
  it('read back the position they were issued with', () => {
    expect(cursor).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/);
    expect(decodeCursor(key, query, cursor)).toEqual(['q3', 'viewer']);
  });

  it('are refused unless exactly as issued: no padding, whitespace, other alphabet or unused bits', () => {
    const [payload, signature] = cursor.split('.') as [string, string];
    // The last of 22 characters carries 4 bits of the digest and 2 unused ones; flipping one decodes to the same bytes.
    const sameBytes = BASE64URL[BASE64URL.indexOf(signature.at(-1)!) ^ 1];
    const variants = [
      `${cursor}==`,
      `${cursor}=`,
      `${cursor} `,
      ` ${cursor}`,
      `${payload}.${signature.slice(0, 11)} ${signature.slice(11)}`,
      `${payload}.${signature.replaceAll('-', '+').replaceAll('_', '/')}${/[-_]/.test(signature) ? '' : '+'}`,
      `${payload}.${signature.slice(0, -1)}${sameBytes}`,
      `${payload}.${signature}.`,
      `${payload}=.${signature}`,
    ];
    expect(Buffer.from(variants[6]!.split('.')[1]!, 'base64url')).toEqual(Buffer.from(signature, 'base64url'));
    for (const variant of variants) expect(refusal(variant), JSON.stringify(variant)).toBe('invalid-cursor');
  });

  it('are refused for another query, another key, or an edited position', () => {
    const [payload, signature] = cursor.split('.') as [string, string];
    const edited = `${Buffer.from(JSON.stringify(['q4', 'viewer'])).toString('base64url')}.${signature}`;
    expect(refusal(encodeCursor(key, { ...query, subject: 'user:bob' }, ['q3', 'viewer']))).toBe('invalid-cursor');
    expect(refusal(encodeCursor(randomBytes(32), query, ['q3', 'viewer']))).toBe('invalid-cursor');
    expect(refusal(edited)).toBe('invalid-cursor');
    expect(refusal(payload)).toBe('invalid-cursor');
    expect(refusal(`.${signature}`)).toBe('invalid-cursor');
  });

  it('of a listing hold a tuple of so many strings, and none for the first page', () => {
    const tuple = (position: unknown, length: number) => {
      try {
        return decodeStringTuple(key, query, encodeCursor(key, query, position), length);
      } catch (error) {
        return error instanceof DomainError ? `${error.type}: ${error.detail}` : error;
      }
    };
    expect(decodeStringTuple(key, query, undefined, 2)).toBeNull();
    expect(tuple(['q3', 'viewer'], 2)).toEqual(['q3', 'viewer']);
    expect(tuple(['q3'], 1)).toEqual(['q3']);
    for (const [position, length] of [
      [['q3', 'viewer'], 1],
      [['q3'], 2],
      [['q3', 7], 2],
      [{ 0: 'q3', length: 1 }, 1],
      ['q3', 1],
      [null, 1],
    ] as const) {
      expect(tuple(position, length), JSON.stringify(position)).toBe('invalid-cursor: the cursor is malformed');
    }
  });

  it('of a keyset page point after its last row while more rows were read than the limit, and are null on the last page', () => {
    const rows = [{ id: 'a' }, { id: 'b' }, { id: 'c' }];
    const page = (read: typeof rows, limit: number) => keysetPage(key, query, read, limit, (row) => [row.id]);
    const first = page(rows, 2);
    expect(first.rows).toEqual([{ id: 'a' }, { id: 'b' }]);
    expect(decodeCursor(key, query, first.next_cursor!)).toEqual(['b']);
    expect(decodeCursor(key, query, page([...rows, { id: 'd' }], 3).next_cursor!)).toEqual(['c']);
    expect(page(rows, 3)).toEqual({ rows, next_cursor: null });
    expect(page(rows.slice(0, 2), 3)).toEqual({ rows: rows.slice(0, 2), next_cursor: null });
    expect(page([], 3)).toEqual({ rows: [], next_cursor: null });
  });
});
