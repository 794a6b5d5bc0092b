import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { KeyVerifier, type Credential } from '../../src/auth/verifier.ts';
import { hashSecret, newSecret, secretPrefix } from '../../src/auth/secrets.ts';
import type { Db } from '../../src/store/db.ts';

/** A database holding the given live secrets, counting the lookups made of it. */
function databaseWith(...secrets: string[]) {
  const rows = secrets.map((secret, i) => ({
    id: `key_${i}`,
    tenantId: 'tenant',
    scopes: ['admin'],
    prefix: secretPrefix(secret),
    secretHash: new Uint8Array(hashSecret(secret)),
    tenant: { cursorSecret: new Uint8Array(32) },
  }));
  const findMany = vi.fn(async ({ where }: { where: { prefix: string } }) => rows.filter((row) => row.prefix === where.prefix));
  const db = { apiKey: { findMany, updateMany: vi.fn(async () => ({ count: 1 })) } } as unknown as Db;
  return { db, lookups: () => findMany.mock.calls.length };
}

describe('KeyVerifier', () => {
  const T0 = 1_000_000;
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(T0);
  });
  afterEach(() => vi.useRealTimers());

  const credential = (keys: KeyVerifier, secret: string): Credential => keys.credentialOf(secret)!;

  it('verifies a credential again from memory: the check after the body costs no query', async () => {
    const secret = newSecret();
    const { db, lookups } = databaseWith(secret);
    const keys = new KeyVerifier(db);
    const presented = credential(keys, secret);
    expect((await keys.verify(presented))?.keyId).toBe('key_0');
    vi.setSystemTime(T0 + 200);
    expect((await keys.verify(presented))?.keyId).toBe('key_0');
    expect(lookups()).toBe(1);
    keys.forgetAll();
    await keys.verify(presented);
    expect(lookups()).toBe(2);
  });

  it('keys its memory by digest, never by the secret', () => {
    const secret = newSecret();
    const presented = credential(new KeyVerifier(databaseWith().db), secret);
    expect(presented).not.toContain(secret.slice(17));
    expect(presented).toBe(`${secretPrefix(secret)}${hashSecret(secret).toString('base64')}`);
  });
});
