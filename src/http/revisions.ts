import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { CONSISTENCY_HEADER } from '../../contract/index.ts';
import { DomainError } from '../errors.ts';
import type { Position } from '../store/revisions.ts';
import { digestsEqual } from '../auth/secrets.ts';
import { decodeCursor } from './cursor.ts';

/**
 * Revisions as the API shows them: opaque tokens (docs/consistency.md#revisions). A position holds
 * PostgreSQL's transaction id and the feed's sequence, both counted across every tenant, so it is
 * sealed with keys derived from the tenant's cursor key, which every node shares: its 16 bytes are
 * one AES-256 block (a permutation: the same position gives the same token, a feed's revisions stay
 * usable as the ids of its changes) and an HMAC over that block makes it tamper-evident. A caller
 * reads neither a position nor another tenant's activity from it, and cannot edit or forge one; a
 * token of another tenant fails (400 invalid-revision).
 */
const POSITION_BYTES = 16; // xid and seq, 64 bits each: exactly one AES block
const TAG_BYTES = 16;
const SEALED_LENGTH = Math.ceil(((POSITION_BYTES + TAG_BYTES) * 4) / 3);

export function encodeRevision(key: Buffer, position: Position): string {
  return encodeRevisions(key, [position])[0]!;
}

/** The tokens of many positions: one cipher seals them all (ECB seals each block alone), as a page of the changes feed needs. */
export function encodeRevisions(key: Buffer, positions: readonly Position[]): string[] {
  const keys = sealingKeys(key);
  const plain = Buffer.alloc(POSITION_BYTES * positions.length);
  positions.forEach(({ xid, seq }, i) => {
    plain.writeBigUInt64BE(xid, i * POSITION_BYTES);
    plain.writeBigUInt64BE(seq, i * POSITION_BYTES + 8);
  });
  const cipher = createCipheriv('aes-256-ecb', keys.block, null).setAutoPadding(false);
  const sealed = Buffer.concat([cipher.update(plain), cipher.final()]);
  return positions.map((_, i) => {
    const block = sealed.subarray(i * POSITION_BYTES, (i + 1) * POSITION_BYTES);
    return Buffer.concat([block, tag(keys.tag, block)]).toString('base64url');
  });
}

export function decodeRevision(key: Buffer, token: string): Position {
  const known = opened.get(token);
  if (known?.key.length === key.length && timingSafeEqual(known.key, key)) return known.position;
  const position = open(key, token);
  opened.set(token, { key: Buffer.from(key), position });
  return position;
}

/**
 * Tokens that opened, with the key they opened with: a burst of reads at one revision
 * (docs/consistency.md#reading-at-a-revision) opens it once per process, not per request.
 * The same token under another key (another tenant's, or a tenant's new one) is opened afresh.
 */
const opened = new LRUCache<string, { key: Buffer; position: Readonly<Position> }>({ max: 10_000 });

interface SealingKeys {
  block: Buffer;
  tag: Buffer;
}

/** The sealing keys of each cursor key seen lately: deriving them costs more than sealing a position. */
const derived = new LRUCache<string, SealingKeys>({ max: 10_000 });

function sealingKeys(key: Buffer): SealingKeys {
  const id = key.toString('base64');
  let keys = derived.get(id);
  if (!keys) {
    const derive = (use: string) => Buffer.from(hkdfSync('sha256', key, Buffer.alloc(0), `grantd revision ${use}`, 32));
    keys = { block: derive('block'), tag: derive('tag') };
    derived.set(id, keys);
  }
  return keys;
}

const tag = (key: Buffer, sealed: Buffer): Buffer => createHmac('sha256', key).update(sealed).digest().subarray(0, TAG_BYTES);

function open(key: Buffer, token: string): Readonly<Position> {
  if (token.includes('.')) return openSigned(key, token);
  // Compared as text after a round trip: Node's base64url decoder skips foreign characters and padding.
  const bytes = Buffer.from(token, 'base64url');
  if (token.length !== SEALED_LENGTH || bytes.toString('base64url') !== token) throw notIssued();
  const keys = sealingKeys(key);
  const sealed = bytes.subarray(0, POSITION_BYTES);
  if (!digestsEqual(bytes.subarray(POSITION_BYTES), tag(keys.tag, sealed))) throw notIssued();
  const decipher = createDecipheriv('aes-256-ecb', keys.block, null).setAutoPadding(false);
  const plain = Buffer.concat([decipher.update(sealed), decipher.final()]);
  return Object.freeze({ xid: plain.readBigUInt64BE(0), seq: plain.readBigUInt64BE(8) });
}

/**
 * A revision issued before they were sealed (until 2026-11-25): the position as JSON, signed like a
 * cursor. Still honoured, so that a feed follower that kept one resumes where it stopped; never issued.
 */
function openSigned(key: Buffer, token: string): Readonly<Position> {
  let position: unknown;
  try {
    position = decodeCursor(key, 'revision', token);
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
  return decodeRevisionAt(`header.${CONSISTENCY_HEADER}`, key, atLeast[1]!).xid;
}

/** decodeRevision, its problem naming where the revision came from (`query.after`), as a schema failure's would. */
export function decodeRevisionAt(where: string, key: Buffer, token: string): Position {
  try {
    return decodeRevision(key, token);
  } catch (error) {
    throw error instanceof DomainError ? error.at(where) : error;
  }
}
