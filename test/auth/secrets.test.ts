import { describe, expect, it } from 'vitest';
import {
  digestsEqual,
  hashSecret,
  KEY_ID_PATTERN,
  looksLikeSecret,
  newKeyId,
  newSecret,
  PREFIX_LENGTH,
  randomBase62,
  secretPrefix,
} from '../../src/auth/secrets.ts';

const BASE62 = /^[0-9A-Za-z]*$/;

describe('secrets of API keys', () => {
  it('are svc_live_ and 43 base62 characters, each new one different', () => {
    const secrets = Array.from({ length: 100 }, newSecret);
    for (const secret of secrets) {
      expect(secret).toMatch(/^svc_live_[0-9A-Za-z]{43}$/);
      expect(looksLikeSecret(secret)).toBe(true);
    }
    expect(new Set(secrets).size).toBe(100);
  });

  it('draws every base62 character about equally often (no modulo bias)', () => {
    const drawn = randomBase62(62_000);
    expect(drawn).toMatch(BASE62);
    const counts = new Map<string, number>();
    for (const character of drawn) counts.set(character, (counts.get(character) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // 1,000 expected each (standard deviation 31); a biased draw (byte % 62 over all 256 bytes) gives the first 8 about 1,210.
    for (const count of counts.values()) {
      expect(count).toBeGreaterThan(820);
      expect(count).toBeLessThan(1_180);
    }
  });

  it('are shown and looked up by their first 17 characters', () => {
    const secret = newSecret();
    expect(PREFIX_LENGTH).toBe(17);
    expect(secretPrefix(secret)).toBe(secret.slice(0, 17));
  });

  it.each([
    ['another prefix', `svc_test_${'a'.repeat(43)}`],
    ['one character short', `svc_live_${'a'.repeat(42)}`],
    ['one character long', `svc_live_${'a'.repeat(44)}`],
    ['a character outside base62', `svc_live_${'a'.repeat(42)}-`],
    ['a multi-byte character', `svc_live_${'a'.repeat(42)}é`],
    ['nothing', ''],
  ])('are not mistaken for something else: %s', (_, value) => {
    expect(looksLikeSecret(value)).toBe(false);
  });

  it('are compared by SHA-256 digest, equal only when the same', () => {
    const secret = newSecret();
    expect(hashSecret(secret)).toHaveLength(32);
    expect(digestsEqual(hashSecret(secret), hashSecret(secret))).toBe(true);
    expect(digestsEqual(hashSecret(secret), hashSecret(newSecret()))).toBe(false);
    expect(digestsEqual(hashSecret(secret), hashSecret(secret).subarray(0, 31))).toBe(false);
  });
});

describe('ids of API keys', () => {
  it('are key_ and 20 base62 characters, the shape KEY_ID_PATTERN accepts', () => {
    const id = newKeyId();
    expect(id).toMatch(/^key_[0-9A-Za-z]{20}$/);
    expect(KEY_ID_PATTERN.test(id)).toBe(true);
    for (const notAnId of ['key_', 'key_a-b', 'KEY_abc', `key_abc\u0000`]) expect(KEY_ID_PATTERN.test(notAnId)).toBe(false);
  });
});
