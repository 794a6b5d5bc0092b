import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createServices } from '../../src/runtime.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { callGrantd, clientCredentialsToken, clientForm, startServer, type RunningServer } from './serve.ts';

/** Two grantd nodes on one database: a write on A is seen by B within one second. */
describe('several nodes on one database', () => {
  let a: RunningServer;
  let b: RunningServer;
  let adminKey: string;

  beforeAll(async () => {
    const services = createServices(databaseUrl(), { poolSize: 1 }, pino({ level: 'silent' }));
    adminKey = (await createTenant(services.db, uniqueName('nodes'))).key.secret;
    await services.close();
    [a, b] = await Promise.all([startServer({ DATABASE_URL: databaseUrl() }), startServer({ DATABASE_URL: databaseUrl() })]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
  });

  const call = (node: RunningServer, key: string, method: string, path: string, body?: unknown) => callGrantd(node.baseUrl, key, method, path, body);

  /** Milliseconds until `probe` holds on B, polling; fails past two seconds. */
  const until = async (probe: () => Promise<boolean>) => {
    const started = Date.now();
    while (!(await probe())) {
      if (Date.now() - started > 2_000) throw new Error('node B did not follow within 2 s');
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    return Date.now() - started;
  };

  it('refuses on B, within a second, a key revoked on A', async () => {
    const created = await call(a, adminKey, 'POST', '/v1/keys', { label: 'doomed', scopes: ['grant:read'] });
    const key = created.body.secret as string;
    expect((await call(b, key, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await call(a, adminKey, 'DELETE', `/v1/keys/${created.body.id}`)).status).toBe(204);
    expect((await call(a, key, 'GET', '/v1/namespaces')).status).toBe(401);
    expect(await until(async () => (await call(b, key, 'GET', '/v1/namespaces')).status === 401)).toBeLessThan(1_000);
  });

  it('refuses on B, within a second, an OAuth token revoked on A, and the tokens of a client deleted on A', async () => {
    const client = (await call(a, adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', scopes: ['grant:read'] })).body;
    const revoked = await clientCredentialsToken(a.baseUrl, client);
    expect((await call(b, revoked, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await clientForm(a.baseUrl, '/v1/oauth/revoke', { token: revoked }, client)).status).toBe(200);
    expect((await call(a, revoked, 'GET', '/v1/namespaces')).status).toBe(401);
    expect(await until(async () => (await call(b, revoked, 'GET', '/v1/namespaces')).status === 401)).toBeLessThan(1_000);

    const orphaned = await clientCredentialsToken(a.baseUrl, client);
    expect((await call(b, orphaned, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await call(a, adminKey, 'DELETE', `/v1/oauth/clients/${client.client_id}`)).status).toBe(204);
    expect(await until(async () => (await call(b, orphaned, 'GET', '/v1/namespaces')).status === 401)).toBeLessThan(1_000);
  });

  it('sees on B, within a second, a namespace created, an agent killed and a grant deleted on A', async () => {
    const relations = { owner: {}, viewer: { includes: ['owner'] } };
    expect((await call(a, adminKey, 'POST', '/v1/namespaces', { name: 'nodedoc', relations })).status).toBe(201);
    expect((await call(b, adminKey, 'POST', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'nodedoc:d1' })).status).toBe(201);
    const viaB = () => call(b, adminKey, 'POST', '/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'nodedoc:d1' });
    expect((await viaB()).body).toEqual({ allowed: true });

    expect((await call(a, adminKey, 'POST', '/v1/agents', { external_id: 'nodebot', scope: ['*:*'] })).status).toBe(201);
    expect((await call(a, adminKey, 'POST', '/v1/grants', { subject: 'agent:nodebot', relation: 'owner', object: 'nodedoc:d1' })).status).toBe(201);
    const botViaB = () => call(b, adminKey, 'POST', '/v1/check', { subject: 'agent:nodebot', relation: 'viewer', object: 'nodedoc:d1' });
    // B may answer from grants it holds in memory, caught up at most every half second.
    expect(await until(async () => (await botViaB()).body.allowed === true)).toBeLessThan(1_000);
    expect((await call(a, adminKey, 'DELETE', '/v1/agents/nodebot')).body).toEqual({ external_id: 'nodebot', grants_removed: 1, clients_removed: 0 });
    expect(await until(async () => (await botViaB()).body.allowed === false)).toBeLessThan(1_000);

    expect((await call(a, adminKey, 'DELETE', '/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'nodedoc:d1' })).status).toBe(204);
    expect(await until(async () => (await viaB()).body.allowed === false)).toBeLessThan(1_000);
  });
});

describe('a node whose Redis is unreachable', () => {
  let server: RunningServer;
  let adminKey: string;

  beforeAll(async () => {
    const services = createServices(databaseUrl(), { poolSize: 1 }, pino({ level: 'silent' }));
    adminKey = (await createTenant(services.db, uniqueName('noredis'))).key.secret;
    await services.close();
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
