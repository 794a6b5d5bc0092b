import { timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { DomainError } from '../errors.ts';
import type { Position } from '../store/revisions.ts';
import { decodeCursor, encodeCursor } from './cursor.ts';

/**
 * Revisions as the API shows them: opaque tokens, a position signed like a cursor (cursor.ts: HMAC
 * with the tenant's key, which every node shares, compared in constant time), bound to the tenant
 * and to being a revision. A token edited, forged or of another tenant is 400 invalid-revision.
 */
const BINDING = 'revision';

export const encodeRevision = (key: Buffer, { xid, seq }: Position): string => encodeCursor(key, BINDING, [xid.toString(), seq.toString()]);

export function decodeRevision(key: Buffer, token: string): Position {
  const known = verified.get(token);
  if (known?.key.length === key.length && timingSafeEqual(known.key, key)) return known.position;
  const position = verify(key, token);
  verified.set(token, { key: Buffer.from(key), position });
  return position;
}

/**
 * Tokens that verified, with the key they verified with: a burst of reads at one revision
 * (docs/consistency.md#reading-at-a-revision) computes its HMAC once per process, not per request.
 * The same token under another key (another tenant's, or a tenant's new one) is verified afresh.
 */
const verified = new LRUCache<string, { key: Buffer; position: Readonly<Position> }>({ max: 10_000 });

function verify(key: Buffer, token: string): Readonly<Position> {
  let position: unknown;
  try {
    position = decodeCursor(key, BINDING, token);
  } catch {
    throw notIssued();
  }
  if (!Array.isArray(position) || position.length !== 2 || !position.every((p) => typeof p === 'string' && /^[0-9]{1,19}$/.test(p))) {
    throw notIssued();
  }
  return Object.freeze({ xid: BigInt(position[0] as string), seq: BigInt(position[1] as string) });
}

const notIssued = () => new DomainError('invalid-revision', 'the revision was not issued by this server for this tenant');

/** What a read's Grantd-Consistency asks: the transaction its state must include, or null for `full`. */
export function readConsistency(key: Buffer, header: string): bigint | null {
  const value = header.trim();
  if (value.toLowerCase() === 'full') return null;
  const atLeast = /^at-least +(\S+)$/i.exec(value);
  if (!atLeast) throw new DomainError('invalid-request', 'Grantd-Consistency must be `at-least <revision>` or `full`');
  return decodeRevision(key, atLeast[1]!).xid;
}
