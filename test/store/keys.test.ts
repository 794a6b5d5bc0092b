import { afterAll, describe, expect, it } from 'vitest';
import { hashSecret, secretPrefix } from '../../src/auth/secrets.ts';
import { connect } from '../../src/store/db.ts';
import { findKey, revokeKey, touchKeys } from '../../src/store/keys.ts';
import { databaseUrl, newTenant, useServices } from '../helpers.ts';

const services = useServices();
/** The lookups run on the pool under Prisma (src/store/keys.ts): one of their own here. */
const own = connect(databaseUrl(), 2);
afterAll(() => own.close());

describe('the lookups of keys on the pool', () => {
  it("finds a live key by its prefix and digest, with its tenant's cursor secret", async () => {
    const tenant = await newTenant(services);
    const found = await findKey(own.pool, secretPrefix(tenant.adminKey), hashSecret(tenant.adminKey));
    const stored = await services.db.tenant.findUniqueOrThrow({ where: { id: tenant.id }, select: { cursorSecret: true } });
    expect(found.prefixInUse).toBe(true);
    expect(found.principal).toEqual({
      kind: 'api_key',
      keyId: expect.stringMatching(/^key_/),
      tenantId: tenant.id,
      scopes: ['admin'],
      cursorSecret: Buffer.from(stored.cursorSecret),
    });
  });

  it('finds nothing for another digest under a prefix in use, nor for a revoked key', async () => {
    const tenant = await newTenant(services);
    const prefix = secretPrefix(tenant.adminKey);
    expect(await findKey(own.pool, prefix, hashSecret(`${tenant.adminKey}x`))).toEqual({ principal: null, prefixInUse: true });
    const { principal } = await findKey(own.pool, prefix, hashSecret(tenant.adminKey));
    expect(await revokeKey(services.db, tenant.id, principal!.keyId)).toBe(true);
    expect(await findKey(own.pool, prefix, hashSecret(tenant.adminKey))).toEqual({ principal: null, prefixInUse: false });
  });

  it("records keys' last uses together, each only through its own tenant", async () => {
    const [a, b] = await Promise.all([newTenant(services), newTenant(services)]);
    const keyOf = async (tenant: { adminKey: string }) =>
      (await findKey(own.pool, secretPrefix(tenant.adminKey), hashSecret(tenant.adminKey))).principal!.keyId;
    const [keyA, keyB] = await Promise.all([keyOf(a), keyOf(b)]);
    const lastUsed = async (keyId: string) => (await services.db.apiKey.findUniqueOrThrow({ where: { id: keyId } })).lastUsedAt;
    await touchKeys(own.pool, [
      { tenantId: b.id, keyId: keyA, at: new Date(1_000) },
      { tenantId: b.id, keyId: keyB, at: new Date(1_500) },
    ]);
    expect([await lastUsed(keyA), await lastUsed(keyB)]).toEqual([null, new Date(1_500)]);
    await touchKeys(own.pool, [
      { tenantId: a.id, keyId: keyA, at: new Date(2_000) },
      { tenantId: b.id, keyId: keyB, at: new Date(3_000) },
    ]);
    expect([await lastUsed(keyA), await lastUsed(keyB)]).toEqual([new Date(2_000), new Date(3_000)]);
  });
});
