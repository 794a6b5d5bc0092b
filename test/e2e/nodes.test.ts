import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { databaseUrl } from '../helpers.ts';
import { callGrantd, clientCredentialsToken, clientForm, newTenantKey, startServer, useTwoNodes, type RunningServer } from './serve.ts';

/**
 * Waits until `probe` holds on node B. How soon is the age of each node's memory (FRESHNESS_MS, 500 ms),
 * tested on fake clocks (test/store/cached-checker.test.ts, test/auth/verifier.test.ts,
 * test/cache/tenant-cache.test.ts); here, on a machine of any speed, that B gets there at all.
 */
const untilOnB = (probe: () => Promise<boolean>) => expect.poll(probe, { timeout: 30_000, interval: 25 }).toBe(true);

/** Two grantd nodes on one database: a write on A is seen by B once B's memory of what it changed expires. */
describe('several nodes on one database', () => {
  const nodes = useTwoNodes('nodes');
  const call = (node: RunningServer, key: string, method: string, path: string, body?: unknown) => callGrantd(node.baseUrl, key, method, path, body);

  it('refuses on B too a key revoked on A', async () => {
    const { a, b, key: adminKey } = nodes;
    const created = await call(a, adminKey, 'POST', '/v1/keys', { label: 'doomed', scopes: ['grant:read'] });
    const key = created.body.secret as string;
    expect((await call(b, key, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await call(a, adminKey, 'DELETE', `/v1/keys/${created.body.id}`)).status).toBe(204);
    expect((await call(a, key, 'GET', '/v1/namespaces')).status).toBe(401);
    await untilOnB(async () => (await call(b, key, 'GET', '/v1/namespaces')).status === 401);
  });

  it('refuses on B too an OAuth token revoked on A, and the tokens of a client deleted on A', async () => {
    const { a, b, key: adminKey } = nodes;
    const client = (await call(a, adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', scopes: ['grant:read'] })).body;
    const revoked = await clientCredentialsToken(a.baseUrl, client);
    expect((await call(b, revoked, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await clientForm(a.baseUrl, '/v1/oauth/revoke', { token: revoked }, client)).status).toBe(200);
    expect((await call(a, revoked, 'GET', '/v1/namespaces')).status).toBe(401);
    await untilOnB(async () => (await call(b, revoked, 'GET', '/v1/namespaces')).status === 401);

    const orphaned = await clientCredentialsToken(a.baseUrl, client);
    expect((await call(b, orphaned, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await call(a, adminKey, 'DELETE', `/v1/oauth/clients/${client.client_id}`)).status).toBe(204);
    await untilOnB(async () => (await call(b, orphaned, 'GET', '/v1/namespaces')).status === 401);
  });

  it('sees on B too a namespace created, an agent killed and a grant deleted on A', async () => {
    const { a, b, key: adminKey } = nodes;
    const relations = { owner: {}, viewer: { includes: ['owner'] } };
    expect((await call(a, adminKey, 'POST', '/v1/namespaces', { name: 'nodedoc', relations })).status).toBe(201);
    expect((await call(b, adminKey, 'POST', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'nodedoc:d1' })).status).toBe(201);
    const viaB = () => call(b, adminKey, 'POST', '/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'nodedoc:d1' });
    expect((await viaB()).body).toEqual({ allowed: true });

    expect((await call(a, adminKey, 'POST', '/v1/agents', { external_id: 'nodebot', scope: ['*:*'] })).status).toBe(201);
    expect((await call(a, adminKey, 'POST', '/v1/grants', { subject: 'agent:nodebot', relation: 'owner', object: 'nodedoc:d1' })).status).toBe(201);
    const botViaB = () => call(b, adminKey, 'POST', '/v1/check', { subject: 'agent:nodebot', relation: 'viewer', object: 'nodedoc:d1' });
    // B may answer from grants it holds in memory, caught up at most every half second.
    await untilOnB(async () => (await botViaB()).body.allowed === true);
    expect((await call(a, adminKey, 'DELETE', '/v1/agents/nodebot')).body).toEqual({ external_id: 'nodebot', grants_removed: 1, clients_removed: 0 });
    await untilOnB(async () => (await botViaB()).body.allowed === false);

    expect((await call(a, adminKey, 'DELETE', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'nodedoc:d1' })).status).toBe(204);
    await untilOnB(async () => (await viaB()).body.allowed === false);
  });
});

describe('several nodes on one database: the model', () => {
  const nodes = useTwoNodes('nodes');
  const call = (node: RunningServer, method: string, path: string, body?: unknown) => callGrantd(node.baseUrl, nodes.key, method, path, body);

  it('sees on B too a namespace changed and deleted on A', async () => {
    const { a, b } = nodes;
    const relations = { owner: {}, viewer: { includes: ['owner'] } };
    expect((await call(a, 'POST', '/v1/namespaces', { name: 'modeldoc', relations })).status).toBe(201);
    expect((await call(b, 'POST', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'modeldoc:d1' })).status).toBe(201);
    const viaB = () => call(b, 'POST', '/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'modeldoc:d1' });
    expect((await viaB()).body).toEqual({ allowed: true });

    // B answers from the compiled schema it holds, and from grants it holds in memory, until it reloads.
    expect((await call(a, 'PUT', '/v1/namespaces/modeldoc', { relations: { ...relations, viewer: {} } })).status).toBe(200);
    await untilOnB(async () => (await viaB()).body.allowed === false);

    expect((await call(a, 'DELETE', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'modeldoc:d1' })).status).toBe(204);
    expect((await call(a, 'DELETE', '/v1/namespaces/modeldoc')).status).toBe(204);
    await untilOnB(async () => (await viaB()).status === 404);
    expect((await viaB()).body.type).toBe('namespace-not-found');
  });
});

describe('a node whose Redis is unreachable', () => {
  let server: RunningServer;
  let adminKey: string;

  beforeAll(async () => {
    adminKey = await newTenantKey('noredis');
    // Nothing listens on port 1: start-up must not wait for Redis, and its workers must not fail requests for it.
    server = await startServer({ DATABASE_URL: databaseUrl(), GRANTD_WORKERS: '2', GRANTD_RATE_LIMIT: '1000', REDIS_URL: 'redis://127.0.0.1:1' });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('starts, answers, and warns that its limits are per node', async () => {
    for (let i = 0; i < 4; i++) {
      const res = await fetch(`${server.baseUrl}/v1/namespaces`, { headers: { Authorization: `Bearer ${adminKey}` } });
      expect(res.status).toBe(200);
    }
    await vi.waitFor(() => expect(server.output()).toMatch(/Redis is unreachable: rate limits are per node until it is back/));
  });
});
