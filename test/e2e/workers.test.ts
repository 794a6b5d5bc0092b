import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createServices } from '../../src/runtime.ts';
import { createKey } from '../../src/store/keys.ts';
import { createTenant } from '../../src/store/tenants.ts';
import { databaseUrl, uniqueName } from '../helpers.ts';
import { callGrantd, clientCredentialsToken, clientForm, newTenantKey, startServer, type RunningServer } from './serve.ts';

/**
 * `grantd serve` with GRANTD_WORKERS=2. Every request below goes over a connection of its own, and
 * Node's cluster hands connections to the workers in turn, so consecutive requests reach both.
 */
describe('several workers on one node', () => {
  let server: RunningServer;
  let adminKey: string;

  const call = (key: string, method: string, path: string, body?: unknown) => callGrantd(server.baseUrl, key, method, path, body);

  const workerPids = () =>
    execFileSync('pgrep', ['-P', String(server.process.pid)], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map(Number);

  beforeAll(async () => {
    adminKey = await newTenantKey('workers');
    server = await startServer({ DATABASE_URL: databaseUrl(), GRANTD_WORKERS: '2' });
    const relations = { owner: {}, viewer: { includes: ['owner'] } };
    expect((await call(adminKey, 'POST', '/v1/namespaces', { name: 'wdoc', relations })).status).toBe(201);
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
  });

  it("starts the workers it was asked for, with grantd's V8 flags, and logs one listening line", () => {
    expect(workerPids()).toHaveLength(2);
    for (const pid of workerPids()) {
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')).toEqual(
        expect.arrayContaining(['--no-memory-reducer', '--max-semi-space-size=64']),
      );
    }
    expect(server.output().match(/"msg":"grantd listening"/g)).toHaveLength(1);
    expect(server.output()).toMatch(/"workers":2,"msg":"grantd listening"/);
  });

  it('keeps read-after-write whichever worker answers: a grant, its revocation, a key revoked', async () => {
    const key = (await call(adminKey, 'POST', '/v1/keys', { label: 'raw', scopes: ['check:read', 'grant:write'] })).body.secret as string;
    for (let round = 0; round < 4; round++) {
      const triple = { subject: `user:u${round}`, relation: 'owner', object: `wdoc:d${round}` };
      const check = async () => (await call(key, 'POST', '/v1/check', { ...triple, relation: 'viewer' })).body.allowed;
      // Both workers answer, and remember, "no" first.
      expect([await check(), await check()]).toEqual([false, false]);
      expect((await call(key, 'POST', '/v1/grants', triple)).status).toBe(201);
      expect([await check(), await check()]).toEqual([true, true]);
      expect(await call(key, 'DELETE', '/v1/grants', triple)).toMatchObject({ status: 204 });
      expect([await check(), await check()]).toEqual([false, false]);
    }
    const created = (await call(adminKey, 'POST', '/v1/keys', { label: 'doomed', scopes: ['check:read'] })).body;
    const probe = async () => (await call(created.secret, 'POST', '/v1/check', { subject: 'user:x', relation: 'viewer', object: 'wdoc:d0' })).status;
    expect([await probe(), await probe()]).toEqual([200, 200]);
    expect((await call(adminKey, 'DELETE', `/v1/keys/${created.id}`)).status).toBe(204);
    expect([await probe(), await probe()]).toEqual([401, 401]);
  });

  it('refuses at once, whichever worker answers, an OAuth token revoked through another', async () => {
    const client = (await call(adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', scopes: ['check:read'] })).body;
    const token = await clientCredentialsToken(server.baseUrl, client);
    const probe = async () => (await call(token, 'POST', '/v1/check', { subject: 'user:x', relation: 'viewer', object: 'wdoc:d0' })).status;
    expect([await probe(), await probe()]).toEqual([200, 200]);
    expect((await clientForm(server.baseUrl, '/v1/oauth/revoke', { token }, client)).status).toBe(200);
    expect([await probe(), await probe()]).toEqual([401, 401]);
  });

  it('answers by a namespace changed through any worker at once, whichever worker answers', async () => {
    const key = (await call(adminKey, 'POST', '/v1/keys', { label: 'model', scopes: ['check:read'] })).body.secret as string;
    expect((await call(adminKey, 'POST', '/v1/grants', { subject: 'user:m', relation: 'owner', object: 'wdoc:m1' })).status).toBe(201);
    const check = async () => (await call(key, 'POST', '/v1/check', { subject: 'user:m', relation: 'viewer', object: 'wdoc:m1' })).body.allowed;
    expect([await check(), await check()]).toEqual([true, true]);
    const relations = { owner: {}, viewer: { includes: ['owner'] } };
    expect((await call(adminKey, 'PUT', '/v1/namespaces/wdoc', { relations: { ...relations, viewer: {} } })).status).toBe(200);
    expect([await check(), await check()]).toEqual([false, false]);
    expect((await call(adminKey, 'PUT', '/v1/namespaces/wdoc', { relations })).status).toBe(200);
    expect([await check(), await check()]).toEqual([true, true]);
  });

  it("serves every worker's metrics, added up", async () => {
    const before = (await call(adminKey, 'GET', '/metrics')).body as string;
    const count = (text: string) => Number(/grantd_http_requests_total\{route="\/healthz",method="GET",status="200"\} (\d+)/.exec(text)?.[1] ?? 0);
    for (let i = 0; i < 6; i++) expect((await call(adminKey, 'GET', '/healthz')).status).toBe(200);
    expect(count((await call(adminKey, 'GET', '/metrics')).body) - count(before)).toBe(6);
  });

  it('replaces a worker that dies, and answers meanwhile', async () => {
    const [victim, survivor] = workerPids();
    process.kill(victim!, 'SIGKILL');
    // A connection handed out at the instant of death is lost (Node's cluster); from the primary's noticing on, the survivor answers.
    await expect.poll(() => server.output(), { timeout: 10_000 }).toContain('worker died');
    for (let i = 0; i < 4; i++) expect((await call(adminKey, 'GET', '/healthz')).status).toBe(200);
    await expect.poll(workerPids, { timeout: 10_000, interval: 100 }).toHaveLength(2);
    expect(workerPids()).toContain(survivor);
    expect(server.output()).toMatch(/"signal":"SIGKILL","msg":"worker died; starting another"/);
  });

  it('stops every worker on SIGTERM and exits 0', async () => {
    const pids = workerPids();
    expect(await server.stop()).toBe(0);
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  });
});

/** A key's limit over a window of an hour, so that what is counted does not depend on how fast the calls come. */
describe('the rate limit of a node with two workers', () => {
  let server: RunningServer;
  let key: string;

  beforeAll(async () => {
    const services = createServices(databaseUrl(), { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 1 }, pino({ level: 'silent' }));
    const { tenant } = await createTenant(services.db, uniqueName('limited'));
    key = (await createKey(services.db, tenant.id, 'limited', ['check:read'])).secret;
    await services.close();
    server = await startServer({ DATABASE_URL: databaseUrl(), GRANTD_WORKERS: '2', GRANTD_RATE_LIMIT: '8', GRANTD_RATE_LIMIT_WINDOW: '3600' });
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
  });

  it('counts a key per node, not per worker', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 20; i++) {
      statuses.push(
        (await callGrantd(server.baseUrl, key, 'POST', '/v1/check', { subject: 'user:x', relation: 'viewer', object: 'user:bob' })).status,
      );
    }
    // Each worker counting alone would let 16 through.
    expect(statuses).toEqual([...Array<number>(8).fill(200), ...Array<number>(12).fill(429)]);
    const refused = await callGrantd(server.baseUrl, key, 'POST', '/v1/check', { subject: 'user:x', relation: 'viewer', object: 'user:bob' });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3_000);
    expect(refused.body.detail).toContain('8 requests in 3600 s');
  });
});
