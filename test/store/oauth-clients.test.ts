import { describe, expect, it } from 'vitest';
import { DomainError } from '../../src/errors.ts';
import { createKey } from '../../src/store/keys.ts';
import {
  bindOAuthClient,
  CONSOLE_CLIENT_NAME,
  createOAuthClient,
  createTenantWithConsoleClient,
  listOAuthClients,
  registerDynamicClient,
} from '../../src/store/oauth-clients.ts';
import { findTenant } from '../../src/store/tenants.ts';
import { newTenant, uniqueName, useServices } from '../helpers.ts';

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

// Tenant `default` and its console client at the first start (docs/console.md#setting-it-up-one-console-client-per-tenant).
describe('a tenant made with its console client', () => {
  const callbackOf = (name: string) => `http://${name}.test:8080/console/callback`;

  it('makes the tenant, its admin key and its public admin client for the callback', async () => {
    const { db } = services;
    const name = uniqueName('console');
    const created = await createTenantWithConsoleClient(db, name, callbackOf(name));
    expect(await findTenant(db, name)).toEqual(created.tenant);
    expect(await db.apiKey.findUnique({ where: { id: created.key.id }, select: { tenantId: true, scopes: true } })).toEqual({
      tenantId: created.tenant.id,
      scopes: ['admin'],
    });
    expect(await listOAuthClients(db, created.tenant.id)).toEqual([
      expect.objectContaining({
        clientId: created.consoleClientId,
        name: CONSOLE_CLIENT_NAME,
        type: 'public',
        secretHash: null,
        scopes: ['admin'],
        redirectUris: [callbackOf(name)],
      }),
    ]);
  });

  it('makes nothing when the client cannot be made: no tenant is left without its console client', async () => {
    const { db } = services;
    const name = uniqueName('console');
    const refusal = `refuse_console_client_${name.replace(/-/g, '_')}`;
    // The database refuses this test's client alone (its callback names the tenant), after the tenant and its key were written.
    await db.$executeRawUnsafe(`CREATE FUNCTION ${refusal}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF '${callbackOf(name)}' = ANY(NEW.redirect_uris) THEN RAISE EXCEPTION 'refused for the test'; END IF; RETURN NEW; END $$`);
    await db.$executeRawUnsafe(`CREATE TRIGGER ${refusal} BEFORE INSERT ON oauth_clients
      FOR EACH ROW EXECUTE FUNCTION ${refusal}()`);
    try {
      await expect(createTenantWithConsoleClient(db, name, callbackOf(name))).rejects.toThrow(/refused for the test/);
    } finally {
      await db.$executeRawUnsafe(`DROP TRIGGER ${refusal} ON oauth_clients`);
      await db.$executeRawUnsafe(`DROP FUNCTION ${refusal}()`);
    }
    expect(await findTenant(db, name)).toBeNull();
    // The next start finds no tenant, and makes both.
    const created = await createTenantWithConsoleClient(db, name, callbackOf(name));
    expect((await listOAuthClients(db, created.tenant.id)).map((row) => row.clientId)).toEqual([created.consoleClientId]);
  });

  it('refuses a name another tenant has, as a problem, and makes no client', async () => {
    const { db } = services;
    const name = uniqueName('console');
    const first = await createTenantWithConsoleClient(db, name, callbackOf(name));
    const again = createTenantWithConsoleClient(db, name, callbackOf(name));
    await expect(again).rejects.toBeInstanceOf(DomainError);
    await expect(again).rejects.toThrow(`a tenant named ${name} already exists`);
    expect(await db.oAuthClient.count({ where: { redirectUris: { has: callbackOf(name) } } })).toBe(1);
    expect((await listOAuthClients(db, first.tenant.id)).map((row) => row.clientId)).toEqual([first.consoleClientId]);
  });
});
