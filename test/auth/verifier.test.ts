import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type pg from 'pg';
import { databaseLookups, KeyVerifier, type Credential } from '../../src/auth/verifier.ts';
import { hashSecret, newSecret, secretPrefix } from '../../src/auth/secrets.ts';
import type { Db } from '../../src/store/db.ts';

/**
 * The store's lookups over a fake pool holding the given live secrets (the i-th is key_i of
 * tenant_i), counting the lookups made of it: the store's own findKey compares the digests.
 */
function databaseWith(...secrets: string[]) {
  const rows = secrets.map((secret, i) => [`key_${i}`, `tenant_${i}`, ['admin'], hashSecret(secret), Buffer.alloc(32)] as const);
  const findKey = vi.fn(async (prefix: string) => ({ rows: rows.filter((_, i) => secretPrefix(secrets[i]!) === prefix) }));
  /** Each touch statement's keys, with the instants written. */
  const touchKeys = vi.fn(async (_tenantIds: string[], _keyIds: string[], _at: Date[]) => ({ rows: [] }));
  const query = async ({ name, values }: { name: string; values: unknown[] }) => {
    if (name === 'grantd_find_key') return findKey(values[0] as string);
    if (name === 'grantd_touch_keys') return touchKeys(...(values as [string[], string[], Date[]]));
    throw new Error(`unexpected statement ${name}`);
  };
  const store = databaseLookups({} as Db, { query } as unknown as pg.Pool);
  return {
    store,
    lookups: () => findKey.mock.calls.length,
    touches: () => touchKeys.mock.calls.flatMap(([, keyIds, at]) => keyIds.map((keyId, i) => [keyId, at[i]!.getTime()])),
    /** The keys of each touch statement. */
    statements: () => touchKeys.mock.calls.map(([, keyIds]) => keyIds),
    findKey,
    touchKeys,
  };
}

/** A well-formed secret with the given 8 characters after `svc_live_`. */
const secretWithPrefix = (eight: string): string => `svc_live_${eight}${newSecret().slice(17)}`;

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
    const { store, lookups } = databaseWith(secret);
    const keys = new KeyVerifier(store);
    const presented = credential(keys, secret);
    expect((await keys.verify(presented))?.keyId).toBe('key_0');
    vi.setSystemTime(T0 + 200);
    expect((await keys.verify(presented))?.keyId).toBe('key_0');
    expect(lookups()).toBe(1);
    keys.forgetAll();
    await keys.verify(presented);
    expect(lookups()).toBe(2);
  });

  it("forgets one tenant's keys, not another's, and trusts no lookup begun before its tenant was forgotten", async () => {
    const secrets = [newSecret(), newSecret()];
    const { store, lookups } = databaseWith(...secrets);
    const keys = new KeyVerifier(store);
    const [a, b] = secrets.map((secret) => credential(keys, secret)) as [Credential, Credential];
    // A lookup under way when its tenant is forgotten: its answer is not used, a new lookup's is.
    const verifying = keys.verify(a);
    keys.forgetTenant('tenant_0');
    expect((await verifying)?.keyId).toBe('key_0');
    expect(lookups()).toBe(2);
    await keys.verify(b);
    expect(lookups()).toBe(3);

    keys.forgetTenant('tenant_0');
    expect(keys.verifiedNow(a)).toBeUndefined();
    // Not held, but found live lately: its next lookup is counted only if it fails.
    expect(keys.isKnown(a)).toBe(true);
    expect(keys.verifiedNow(b)?.keyId).toBe('key_1');
    expect(keys.isKnown(b)).toBe(true);
    expect((await keys.verify(a))?.keyId).toBe('key_0');
    expect((await keys.verify(b))?.keyId).toBe('key_1');
    expect(lookups()).toBe(4);
    expect(keys.verifiedNow(a)?.keyId).toBe('key_0');
  });

  it('past the tenants it remembers forgetting, takes every key verified before as forgotten', async () => {
    const secret = newSecret();
    const { store, lookups } = databaseWith(secret);
    const keys = new KeyVerifier(store, { forgottenTenants: 1 });
    const presented = credential(keys, secret);
    await keys.verify(presented);
    keys.forgetTenant('tenant_0');
    keys.forgetTenant('another'); // pushes tenant_0 out
    expect(keys.verifiedNow(presented)).toBeUndefined();
    await keys.verify(presented);
    expect(lookups()).toBe(2);
    expect(keys.verifiedNow(presented)?.keyId).toBe('key_0');
  });

  it('remembers for 500 ms that no live key has a prefix: the same bad key, or another with its prefix, costs no query', async () => {
    const { store, lookups } = databaseWith(newSecret());
    const keys = new KeyVerifier(store);
    const bad = secretWithPrefix('AAAAAAAA');
    expect(await keys.verify(credential(keys, bad))).toBeNull();
    expect(await keys.verify(credential(keys, bad))).toBeNull();
    expect(await keys.verify(credential(keys, secretWithPrefix('AAAAAAAA')))).toBeNull();
    expect(lookups()).toBe(1);
    vi.setSystemTime(T0 + 500);
    expect(await keys.verify(credential(keys, bad))).toBeNull();
    expect(lookups()).toBe(1);
    vi.setSystemTime(T0 + 501);
    expect(await keys.verify(credential(keys, bad))).toBeNull();
    expect(lookups()).toBe(2);
  });

  it('does not remember a prefix as absent when a live key has it: that key still works', async () => {
    const live = secretWithPrefix('BBBBBBBB');
    const { store, lookups } = databaseWith(live);
    const keys = new KeyVerifier(store);
    expect(await keys.verify(credential(keys, secretWithPrefix('BBBBBBBB')))).toBeNull();
    expect((await keys.verify(credential(keys, live)))?.keyId).toBe('key_0');
    expect(lookups()).toBe(2);
  });

  it('holds a bounded number of absent prefixes, forgetting the least recently used', async () => {
    const { store, lookups } = databaseWith();
    const keys = new KeyVerifier(store, { absentPrefixes: 2 });
    for (const prefix of ['CCCCCCC1', 'CCCCCCC2', 'CCCCCCC3']) await keys.verify(credential(keys, secretWithPrefix(prefix)));
    expect(lookups()).toBe(3);
    await keys.verify(credential(keys, secretWithPrefix('CCCCCCC3')));
    expect(lookups()).toBe(3);
    await keys.verify(credential(keys, secretWithPrefix('CCCCCCC1')));
    expect(lookups()).toBe(4);
  });

  it("records a key's last use when it is looked up, at most once a minute", async () => {
    const secret = newSecret();
    const { store, touches } = databaseWith(secret);
    const keys = new KeyVerifier(store);
    await keys.verify(credential(keys, secret));
    expect(touches()).toEqual([['key_0', T0]]);
    vi.setSystemTime(T0 + 59_999);
    keys.forgetAll();
    await keys.verify(credential(keys, secret));
    expect(touches()).toHaveLength(1);
    vi.setSystemTime(T0 + 60_000);
    keys.forgetAll();
    await keys.verify(credential(keys, secret));
    expect(touches()).toEqual([
      ['key_0', T0],
      ['key_0', T0 + 60_000],
    ]);
  });

  it('writes the last uses found while a touch statement runs together, in the next one (docs/decisions.md#key-uses-are-written-together)', async () => {
    const secrets = [newSecret(), newSecret(), newSecret(), newSecret()];
    const { store, statements, touchKeys } = databaseWith(...secrets);
    let endFirst: () => void = () => undefined;
    touchKeys.mockImplementationOnce(() => new Promise((resolve) => (endFirst = () => resolve({ rows: [] }))));
    const keys = new KeyVerifier(store);
    await keys.verify(credential(keys, secrets[0]!));
    await Promise.all(secrets.slice(1).map((secret) => keys.verify(credential(keys, secret))));
    expect(statements()).toEqual([['key_0']]);
    endFirst();
    await vi.waitFor(() => expect(statements()).toEqual([['key_0'], ['key_1', 'key_2', 'key_3']]));
  });

  it('writes a last use that failed again at the next lookup, and never fails the request for it', async () => {
    const secret = newSecret();
    const { store, touches, touchKeys } = databaseWith(secret);
    touchKeys.mockRejectedValueOnce(new Error('the database is gone'));
    const keys = new KeyVerifier(store);
    expect((await keys.verify(credential(keys, secret)))?.keyId).toBe('key_0');
    await vi.waitFor(() => expect(touchKeys).toHaveBeenCalledTimes(1));
    await Promise.resolve(); // the failure's handler runs
    vi.setSystemTime(T0 + 1);
    keys.forgetAll();
    await keys.verify(credential(keys, secret));
    expect(touches()).toEqual([
      ['key_0', T0],
      ['key_0', T0 + 1],
    ]);
  });

  it('verifies an access token from memory as a key, but not from its expiry on: then it is looked up, and refused', async () => {
    const token = `svc_at_${'t'.repeat(43)}`;
    const row = {
      payload: { scope: 'check:read' },
      grantId: null,
      accountId: null,
      expiresAt: new Date(T0 + 300),
      client: { clientId: 'c1', tenantId: 'tenant', tenant: { cursorSecret: new Uint8Array(32) } },
    };
    // The store asks for a token unexpired at the time of the query.
    const findFirst = vi.fn(async ({ where }: { where: { expiresAt: { gt: Date } } }) => (where.expiresAt.gt < row.expiresAt ? row : null));
    const keys = new KeyVerifier(databaseLookups({ oAuthRecord: { findFirst } } as unknown as Db, {} as pg.Pool));
    const presented = credential(keys, token);
    expect((await keys.verify(presented))?.keyId).toBe('c1');
    vi.setSystemTime(T0 + 249);
    expect((await keys.verify(presented))?.keyId).toBe('c1');
    expect(findFirst).toHaveBeenCalledTimes(1);
    vi.setSystemTime(T0 + 300);
    expect(keys.isKnown(presented)).toBe(false);
    expect(await keys.verify(presented)).toBeNull();
    expect(findFirst).toHaveBeenCalledTimes(2);
  });

  it('takes a key found live in the last 10 minutes as known, not held, until a lookup does not find it', async () => {
    const secret = newSecret();
    const { store, lookups, findKey } = databaseWith(secret);
    const keys = new KeyVerifier(store);
    const presented = credential(keys, secret);
    expect(keys.isKnown(presented)).toBe(false);
    expect((await keys.verify(presented))?.keyId).toBe('key_0');
    // Past its freshness it is not held (a use looks it up), but it is known: the lookup is no likely failure.
    vi.setSystemTime(T0 + 1_000);
    expect(keys.verifiedNow(presented)).toBeUndefined();
    expect(keys.isKnown(presented)).toBe(true);
    vi.setSystemTime(T0 + 10 * 60_000 + 1);
    expect(keys.isKnown(presented)).toBe(false);

    expect((await keys.verify(presented))?.keyId).toBe('key_0');
    expect(lookups()).toBe(2);
    // Revoked: the lookup finds nothing, and the key is no longer known.
    findKey.mockResolvedValue({ rows: [] });
    vi.setSystemTime(T0 + 10 * 60_000 + 1_000);
    expect(await keys.verify(presented)).toBeNull();
    expect(keys.isKnown(presented)).toBe(false);
  });

  it('keys its memory by digest, never by the secret', () => {
    const secret = newSecret();
    const presented = credential(new KeyVerifier(databaseWith().store), secret);
    expect(presented).not.toContain(secret.slice(17));
    expect(presented).toBe(`${secretPrefix(secret)}${hashSecret(secret).toString('base64')}`);
  });
});
