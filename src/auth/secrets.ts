import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

/** Uniformly random base62 characters (rejection sampling keeps every character equally likely). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 248 && out.length < length) out += BASE62[byte % 62];
    }
  }
  return out;
}

const SECRET_PREFIX = 'svc_live_';
/** 43 base62 characters carry 256 random bits (docs/api.md#api-keys). */
const SECRET_RANDOM_LENGTH = 43;
/** Lists show, and lookups start from, the first 17 characters: `svc_live_` and 8 more. */
export const PREFIX_LENGTH = SECRET_PREFIX.length + 8;

export function newSecret(): string {
  return SECRET_PREFIX + randomBase62(SECRET_RANDOM_LENGTH);
}

export const newKeyId = (): string => `key_${randomBase62(20)}`;
/** The shape of every id newKeyId makes; anything else names no key. */
export const KEY_ID_PATTERN = /^key_[A-Za-z0-9]+$/;

export const hashSecret = (secret: string): Buffer => hash('sha256', secret, 'buffer');
/** hashSecret's digest as base64, made by the hash itself (no Buffer to encode afterwards). */
export const hashSecretBase64 = (secret: string): string => hash('sha256', secret, 'base64');

export const secretPrefix = (secret: string): string => secret.slice(0, PREFIX_LENGTH);

/** Constant-time comparison of two SHA-256 digests. */
export function digestsEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Shape check before any lookup: anything else cannot be one of our keys. */
export const looksLikeSecret = (value: string): boolean =>
  value.startsWith(SECRET_PREFIX) && value.length === SECRET_PREFIX.length + SECRET_RANDOM_LENGTH && /^[A-Za-z0-9_]+$/.test(value);
