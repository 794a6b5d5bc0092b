import { expect, it } from 'vitest';
import { createKey } from '../../src/store/keys.ts';
import { bindOAuthClient, createOAuthClient, listOAuthClients, registerDynamicClient } from '../../src/store/oauth-clients.ts';
import { newTenant, useServices } from '../helpers.ts';

// The tenant of a client that registered itself (docs/oauth.md#dynamic-client-registration): none
// until one binding, for good.

const services = useServices();
const dynamicClient = () =>
  registerDynamicClient(services.db, { name: 'MCP client', redirectUris: ['http://127.0.0.1:4000/cb'], scopes: ['check:read'] });

it('binds a client of no tenant to the first tenant, for good', async () => {
  const { db } = services;
  const [a, b] = [await newTenant(services), await newTenant(services)];
  const { clientId, tenantId } = await dynamicClient();
  expect(tenantId).toBeNull();
  expect(await bindOAuthClient(db, b.id, 'oc_not-a-client-id')).toBe(false);
  expect(await bindOAuthClient(db, a.id, clientId)).toBe(true);
  expect(await bindOAuthClient(db, b.id, clientId)).toBe(false);
  expect(await bindOAuthClient(db, a.id, clientId)).toBe(true);
  expect((await listOAuthClients(db, a.id)).map((row) => [row.clientId, row.registered])).toContainEqual([clientId, 'dynamic']);
  expect((await listOAuthClients(db, b.id)).map((row) => row.clientId)).not.toContain(clientId);
});

it('binds to exactly one of two tenants binding at once', async () => {
  const { db } = services;
  const [a, b] = [await newTenant(services), await newTenant(services)];
  for (let round = 0; round < 5; round++) {
    const { clientId } = await dynamicClient();
    const bound = await Promise.all([bindOAuthClient(db, a.id, clientId), bindOAuthClient(db, b.id, clientId)]);
    expect(bound.filter(Boolean)).toHaveLength(1);
    const row = await db.oAuthClient.findUnique({ where: { clientId } });
    expect(row?.tenantId).toBe(bound[0] ? a.id : b.id);
  }
});

it('never binds a client an admin made to another tenant', async () => {
  const { db } = services;
  const [a, b] = [await newTenant(services), await newTenant(services)];
  const key = await createKey(db, a.id, 'admin', ['admin']);
  const { row } = await createOAuthClient(
    db,
    { kind: 'api_key', keyId: key.id, tenantId: a.id },
    {
      name: 'made',
      type: 'public',
      redirectUris: ['https://app.example/cb'],
      scopes: ['check:read'],
      agent: null,
    },
  );
  expect(row.registered).toBe('admin');
  expect(await bindOAuthClient(db, b.id, row.clientId)).toBe(false);
  expect((await db.oAuthClient.findUnique({ where: { clientId: row.clientId } }))?.tenantId).toBe(a.id);
});

it('keeps only a public client that registered itself without a tenant (a check constraint)', async () => {
  const { db } = services;
  const unbound = (data: { registered?: string; type?: string }) =>
    db.oAuthClient.create({
      data: {
        clientId: `oc_${'x'.repeat(19)}${data.type?.[0] ?? 'p'}`,
        tenantId: null,
        name: 'n',
        type: 'public',
        redirectUris: [],
        scopes: [],
        ...data,
      },
    });
  await expect(unbound({ registered: 'admin' })).rejects.toThrow(/oauth_clients_unbound_dynamic/);
  await expect(unbound({ registered: 'dynamic', type: 'confidential' })).rejects.toThrow(/oauth_clients_unbound_dynamic/);
});
