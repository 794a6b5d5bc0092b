import { setImmediate } from 'node:timers/promises';
import { beforeEach, describe, expect, it } from 'vitest';
import type { RouteMetadata } from '../../contract/index.ts';
import type { Change } from '../../src/cluster/changes.ts';
import { createApp } from '../../src/http/app.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { createKey } from '../../src/store/keys.ts';
import { client, DOCUMENT_NAMESPACE, newTenant, useServices, type TestTenant } from '../helpers.ts';
import { contractRoutes } from './routes.ts';

/**
 * What each write announces to the other processes' caches (the contract's `invalidates`), with its
 * tenant, once it has succeeded and before it is answered; a failed write or a read announces nothing.
 */
const services = useServices();
/** The announcements made, each noted once it has resolved (the next turn of the event loop). */
let announced: Change[] = [];
const app = createApp({
  ...services,
  announce: async (change) => {
    await services.announce(change);
    await setImmediate();
    announced.push(change);
  },
} satisfies AppDeps);
let tenant: TestTenant;
let api: ReturnType<typeof client>;

beforeEach(async () => {
  tenant = await newTenant(services);
  api = client(app, tenant.adminKey);
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  announced = [];
});

const grants = () => ({ kind: 'grants', tenantId: tenant.id });
const namespaces = () => ({ kind: 'namespaces', tenantId: tenant.id });
const keys = () => ({ kind: 'keys', tenantId: tenant.id });
const GRANT = { subject: 'user:alice', relation: 'viewer', object: 'document:q3' };

/** What `write` announced, by the time it was answered. */
async function announcedBy(write: () => PromiseLike<unknown>): Promise<Change[]> {
  announced = [];
  await write();
  return announced;
}

describe('grants', () => {
  it('a new grant announces grants; the same grant again announces nothing; a new window announces grants', async () => {
    expect(await announcedBy(() => api.post('/v1/grants', GRANT).expect(201))).toEqual([grants()]);
    expect(await announcedBy(() => api.post('/v1/grants', GRANT).expect(200))).toEqual([]);
    const windowed = { ...GRANT, expires_at: '2999-01-01T00:00:00Z' };
    expect(await announcedBy(() => api.post('/v1/grants', windowed).expect(200))).toEqual([grants()]);
  });

  it('a revoke announces grants, also of a grant that was not there', async () => {
    await api.post('/v1/grants', GRANT).expect(201);
    expect(await announcedBy(() => api.delete('/v1/grants', GRANT).expect(204))).toEqual([grants()]);
    expect(await announcedBy(() => api.delete('/v1/grants', GRANT).expect(204))).toEqual([grants()]);
  });

  it('a batch announces grants', async () => {
    expect(await announcedBy(() => api.post('/v1/grants/batch', { writes: [GRANT] }).expect(200))).toEqual([grants()]);
  });

  it('a refused write announces nothing', async () => {
    expect(await announcedBy(() => api.post('/v1/grants', { ...GRANT, object: 'folder:x' }).expect(404))).toEqual([]);
    expect(await announcedBy(() => api.post('/v1/grants/batch', { writes: [{ ...GRANT, relation: 'nope' }] }).expect(400))).toEqual([]);
  });
});

describe('namespaces', () => {
  it('a creation, an update and a deletion each announce namespaces', async () => {
    const folder = { name: 'folder', relations: { viewer: {} } };
    expect(await announcedBy(() => api.post('/v1/namespaces', folder).expect(201))).toEqual([namespaces()]);
    expect(await announcedBy(() => api.put('/v1/namespaces/folder', { relations: { viewer: {}, owner: {} } }).expect(200))).toEqual([namespaces()]);
    expect(await announcedBy(() => api.delete('/v1/namespaces/folder').expect(204))).toEqual([namespaces()]);
  });

  it('a refused write announces nothing', async () => {
    expect(await announcedBy(() => api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(409))).toEqual([]);
    expect(await announcedBy(() => api.delete('/v1/namespaces/ghost').expect(404))).toEqual([]);
  });
});

describe('agents', () => {
  it('a registration announces grants', async () => {
    expect(await announcedBy(() => api.post('/v1/agents', { external_id: 'bot', scope: [] }).expect(201))).toEqual([grants()]);
  });

  it('a killswitch announces grants, and keys when it ended clients or keys', async () => {
    for (const bot of ['bare', 'with-client', 'with-key']) await api.post('/v1/agents', { external_id: bot, scope: [] }).expect(201);
    await api.post('/v1/oauth/clients', { name: 'c', type: 'confidential', scopes: ['check:read'], agent: 'with-client' }).expect(201);
    await createKey(services.db, tenant.id, 'made by an agent', ['check:read'], ['with-key']);
    expect(await announcedBy(() => api.delete('/v1/agents/bare').expect(200))).toEqual([grants()]);
    expect(await announcedBy(() => api.delete('/v1/agents/with-client').expect(200))).toEqual([grants(), keys()]);
    expect(await announcedBy(() => api.delete('/v1/agents/with-key').expect(200))).toEqual([grants(), keys()]);
  });

  it('a refused write announces nothing', async () => {
    expect(await announcedBy(() => api.delete('/v1/agents/ghost').expect(404))).toEqual([]);
  });
});

describe('keys and OAuth clients', () => {
  it('a new key or client announces nothing; revoking a key or deleting a client announces keys', async () => {
    const key = await announcedBy(() => api.post('/v1/keys', { label: 'k', scopes: ['check:read'] }).expect(201));
    expect(key).toEqual([]);
    const { id } = (await api.get('/v1/keys').expect(200)).body.keys.find((k: { label: string }) => k.label === 'k');
    expect(await announcedBy(() => api.delete(`/v1/keys/${id}`).expect(204))).toEqual([keys()]);
    let clientId = '';
    const created = await announcedBy(async () => {
      clientId = (await api.post('/v1/oauth/clients', { name: 'c', type: 'confidential', scopes: ['check:read'] }).expect(201)).body.client_id;
    });
    expect(created).toEqual([]);
    expect(await announcedBy(() => api.delete(`/v1/oauth/clients/${clientId}`).expect(204))).toEqual([keys()]);
  });

  it('a refused write announces nothing', async () => {
    expect(await announcedBy(() => api.delete('/v1/keys/key_ghost').expect(404))).toEqual([]);
    expect(await announcedBy(() => api.delete('/v1/oauth/clients/ghost').expect(404))).toEqual([]);
    const readOnly = client(app, await tenant.keyWith('grant:read'));
    expect(await announcedBy(() => readOnly.post('/v1/grants', GRANT).expect(403))).toEqual([]);
  });
});

it('reads announce nothing', async () => {
  expect(await announcedBy(() => api.post('/v1/check', GRANT).expect(200))).toEqual([]);
  expect(await announcedBy(() => api.get('/v1/grants').expect(200))).toEqual([]);
});

it('the contract declares what every write invalidates, and idempotence only of POSTs', () => {
  const metadata = contractRoutes().map(({ name, route }) => ({ name, method: route.method, ...(route.metadata as RouteMetadata) }));
  const undeclared = metadata.filter(({ revisions, invalidates }) => (revisions === 'writes') !== (invalidates !== undefined));
  expect(undeclared.map(({ name }) => name)).toEqual([]);
  // GET, PUT and DELETE are idempotent by their method (test/client/retry.test.ts: which calls are retried).
  expect(metadata.filter(({ idempotent, method }) => idempotent && method !== 'POST').map(({ name }) => name)).toEqual([]);
});
