import { once } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import pino from 'pino';
import type { Express } from 'express';
import supertest from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished, vi } from 'vitest';
import { KEY_SCOPES } from '../../contract/index.ts';
import { createApp } from '../../src/http/app.ts';
import { createHttpServer } from '../../src/http/server.ts';
import { DEFAULT_CONFIG } from '../../src/config.ts';
import { createLimits } from '../../src/rate-limits.ts';
import { newSecret } from '../../src/auth/secrets.ts';
import { KeyVerifier } from '../../src/auth/verifier.ts';
import { forgetTenant } from '../../src/cluster/changes.ts';
import { createServices } from '../../src/runtime.ts';
import { Freshness } from '../../src/store/freshness.ts';
import { createKey, revokeKey } from '../../src/store/keys.ts';
import type { AppDeps } from '../../src/http/context.ts';
import { client, databaseUrl, newTenant, useApp, useServices, type TestTenant } from '../helpers.ts';
import { contractRoutes, expectDocumentedResponse, fillPath } from './routes.ts';

const { services, app } = useApp();
let tenant: TestTenant;

beforeAll(async () => {
  tenant = await newTenant(services);
});

const send = (key: string | null, method: string, path: string, body?: object) => {
  let test = supertest(app)[method.toLowerCase() as 'get'](path);
  if (key !== null) test = test.set('Authorization', `Bearer ${key}`);
  return body === undefined ? test : test.send(body);
};

describe('authentication', () => {
  it.each(contractRoutes())('$name answers 401 unauthenticated with WWW-Authenticate when no key is sent', async ({ route }) => {
    const res = await send(null, route.method, fillPath(route));
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ type: 'unauthenticated', status: 401 });
  });

  it.each([
    ['an unknown key', 'svc_live_0000000000000000000000000000000000000000000'],
    ['a malformed key', 'not-a-key'],
    ['a key with a changed last character', null],
  ])('refuses %s', async (_, given) => {
    const key = given ?? `${tenant.adminKey.slice(0, -1)}${tenant.adminKey.endsWith('a') ? 'b' : 'a'}`;
    const res = await send(key, 'GET', '/v1/namespaces');
    expect(res.status).toBe(401);
    expect(res.body.type).toBe('unauthenticated');
  });

  it('refuses other schemes than Bearer', async () => {
    const res = await supertest(app).get('/v1/namespaces').set('Authorization', `Basic ${tenant.adminKey}`);
    expect(res.status).toBe(401);
  });

  it('refuses a revoked key at once', async () => {
    const key = await tenant.keyWith('grant:read');
    expect((await send(key, 'GET', '/v1/namespaces')).status).toBe(200);
    const list = await client(app, tenant.adminKey).get('/v1/keys');
    const id = list.body.keys.find((k: { prefix: string }) => key.startsWith(k.prefix)).id;
    expect((await client(app, tenant.adminKey).delete(`/v1/keys/${id}`)).status).toBe(204);
    expect((await send(key, 'GET', '/v1/namespaces')).status).toBe(401);
  });
});

/** What each route answers a key with its scope, given no parameters but `x1` and an empty body (a GET none). */
const ANSWER_PAST_SCOPES: Record<string, number> = {
  'namespaces.create': 400,
  'namespaces.list': 200,
  'namespaces.get': 404,
  'namespaces.update': 404,
  'namespaces.delete': 404,
  'agents.create': 400,
  'agents.list': 200,
  'agents.get': 404,
  'agents.delete': 404,
  'grants.create': 400,
  'grants.list': 200,
  'grants.revoke': 400,
  'grants.batch': 400,
  check: 400,
  checkBulk: 400,
  'objects.list': 400,
  explain: 400,
  'subjects.list': 400,
  'keys.create': 201,
  'keys.list': 200,
  'keys.revoke': 404,
  'oauth.clients.create': 400,
  'oauth.clients.list': 200,
  'oauth.clients.delete': 404,
  'changes.list': 200,
};

describe('scopes', () => {
  // Every route with every single-scope key: 403 exactly when the key lacks the route's scope.
  const cases = contractRoutes().flatMap((r) => KEY_SCOPES.map((scope) => ({ ...r, keyScope: scope })));
  const allows = ({ scope, keyScope }: (typeof cases)[number]) => keyScope === 'admin' || keyScope === scope;
  const request = async ({ route, keyScope }: (typeof cases)[number]) =>
    send(await tenant.keyWith(keyScope), route.method, fillPath(route), route.method === 'GET' ? undefined : {});

  it.each(cases.filter(allows))('$name with a $keyScope key is past the scope check', async (allowed) => {
    const res = await request(allowed);
    // An empty request to a fresh tenant, answered as the contract says.
    expect(res.status, res.text).toBe(ANSWER_PAST_SCOPES[allowed.name]);
    expectDocumentedResponse(allowed.route, res);
  });

  it.each(cases.filter((c) => !allows(c)))('$name with a $keyScope key is 403 insufficient-scope', async (refused) => {
    const res = await request(refused);
    expect(res.status).toBe(403);
    expect(res.body).toMatchObject({ type: 'insufficient-scope', status: 403 });
  });
});

/** The id of a tenant's live key, found by its secret's prefix. */
async function keyIdOf(app: ReturnType<typeof createApp>, adminKey: string, secret: string): Promise<string> {
  const list = await client(app, adminKey).get('/v1/keys');
  return list.body.keys.find((k: { prefix: string }) => secret.startsWith(k.prefix)).id;
}

/**
 * Sends a POST's headers and the first half of its JSON body over a socket of its own, and resolves
 * once the server has verified its key (so it is waiting for the rest of the body); `finish` sends
 * the rest and resolves with the status.
 */
async function halfSent(services: AppDeps, port: number, key: string, path: string, body: object) {
  const verified = vi.spyOn(services.keys, 'verify');
  const payload = JSON.stringify(body);
  const half = Math.floor(payload.length / 2);
  const socket = connect(port, '127.0.0.1');
  let answer = '';
  socket.setEncoding('utf8').on('data', (chunk: string) => (answer += chunk));
  const closed = once(socket, 'close');
  socket.write(
    `POST ${path} HTTP/1.1\r\nHost: grantd\r\nAuthorization: Bearer ${key}\r\nContent-Type: application/json\r\n` +
      `Content-Length: ${Buffer.byteLength(payload)}\r\nConnection: close\r\n\r\n${payload.slice(0, half)}`,
  );
  await vi.waitFor(() => expect(verified).toHaveBeenCalled());
  expect(await verified.mock.results[0]!.value).not.toBeNull();
  verified.mockRestore();
  return {
    finish: async () => {
      socket.write(payload.slice(half));
      await closed;
      return Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1]);
    },
  };
}

describe('a key revoked while its request is being sent', () => {
  const first = useApp();
  // A second node on the same database: it learns of a revocation from its caches' age alone.
  const second = createServices(databaseUrl(), { ...DEFAULT_CONFIG, GRANTD_DB_POOL_SIZE: 2 }, pino({ level: 'silent' }));
  const secondApp = createApp(second);
  const servers = [createHttpServer(first.app), createHttpServer(secondApp)];
  let tenant: TestTenant;

  beforeAll(async () => {
    tenant = await newTenant(first.services);
    await client(first.app, tenant.adminKey).post('/v1/namespaces', { name: 'slowdoc' }).expect(201);
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
  });
  afterEach(() => vi.restoreAllMocks());
  afterAll(async () => {
    await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    await second.close();
  });
  const portOf = (index: number) => (servers[index]!.address() as AddressInfo).port;

  it('refuses a key creation whose admin key was revoked on this node before the body ended, and creates no key', async () => {
    const doomed = await tenant.keyWith('admin');
    const request = await halfSent(first.services, portOf(0), doomed, '/v1/keys', { label: 'made-by-a-revoked-key', scopes: ['admin'] });
    await client(first.app, tenant.adminKey)
      .delete(`/v1/keys/${await keyIdOf(first.app, tenant.adminKey, doomed)}`)
      .expect(204);
    expect(await request.finish()).toBe(401);
    const labels = (await client(first.app, tenant.adminKey).get('/v1/keys')).body.keys.map((k: { label: string }) => k.label);
    expect(labels).not.toContain('made-by-a-revoked-key');
  });

  it('refuses a grant write whose key was revoked on another node before the body ended, and writes nothing', async () => {
    const doomed = await tenant.keyWith('grant:write');
    const triple = { subject: 'user:slow', relation: 'viewer', object: 'slowdoc:d1' };
    const request = await halfSent(second, portOf(1), doomed, '/v1/grants', triple);
    await client(first.app, tenant.adminKey)
      .delete(`/v1/keys/${await keyIdOf(first.app, tenant.adminKey, doomed)}`)
      .expect(204);
    // The other node uses what it remembers of a key for half a second at most: the rest of the body comes once
    // it refuses the key to a request of its own, however long this machine takes to get there.
    await expect.poll(async () => (await client(secondApp, doomed).get('/v1/namespaces')).status, { timeout: 30_000 }).toBe(401);
    expect(await request.finish()).toBe(401);
    const grants = await client(first.app, tenant.adminKey).get('/v1/grants?object=slowdoc:d1');
    expect(grants.body.grants).toEqual([]);
  });

  it('answers a request whose key stays live', async () => {
    const key = await tenant.keyWith('grant:write');
    const request = await halfSent(first.services, portOf(0), key, '/v1/grants', {
      subject: 'user:steady',
      relation: 'viewer',
      object: 'slowdoc:d2',
    });
    expect(await request.finish()).toBe(201);
  });
});

describe('failed authentications per client address', () => {
  const services = useServices();
  /**
   * Each test's own count of failures (three in a window that cannot end during the test) and its own
   * verifier, which holds a verified key for an hour: what a test sees does not hang on the clock.
   * Reads at a revision drop that verifier's keys, as the node's own do.
   */
  const fresh = (authFailures = 3) => {
    const limits = createLimits({ authFailures, windowSeconds: 3600 }, pino({ level: 'silent' }));
    const keys = new KeyVerifier(services.keys.lookups, { maxAgeMs: 3_600_000 });
    const freshness = new Freshness(services.db, (tenantId) => forgetTenant({ ...services, keys }, tenantId));
    onTestFinished(() => limits.close());
    const deps = { ...services, keys, limits, freshness };
    return { keys, app: createApp(deps), behindProxy: createApp({ ...deps, trustProxy: 'loopback' }) };
  };
  afterEach(() => vi.restoreAllMocks());
  const namespaces = (on: Express, key: string | null, forwardedFor?: string) => {
    let test = supertest(on).get('/v1/namespaces');
    if (key !== null) test = test.set('Authorization', `Bearer ${key}`);
    return forwardedFor ? test.set('X-Forwarded-For', forwardedFor) : test;
  };
  /** Fails authentications from the peer address until it is refused (the 4th failure, past the limit of 3). */
  const exhaust = async (on: Express) => {
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await namespaces(on, newSecret())).status);
    expect(statuses).toEqual([401, 401, 401, 429]);
  };

  it('are limited by default, whether or not GRANTD_RATE_LIMIT is set', () => {
    expect(services.limits.authFailures.limit.points).toBe(DEFAULT_CONFIG.GRANTD_AUTH_FAILURE_LIMIT);
    expect(DEFAULT_CONFIG.GRANTD_AUTH_FAILURE_LIMIT).toBe(20);
  });

  it('answers 429 past the limit, then refuses the address before any lookup, except for a key this node holds as verified', async () => {
    const { keys, app } = fresh();
    const tenant = await newTenant(services);
    const inUse = await tenant.keyWith('grant:read');
    const notYetUsed = await tenant.keyWith('grant:read');
    expect((await namespaces(app, inUse)).status).toBe(200);
    await exhaust(app);

    const lookups = vi.spyOn(keys, 'verify');
    const refused = await namespaces(app, newSecret());
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ type: 'rate-limited', status: 429 });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect((await namespaces(app, 'not-even-a-key')).status).toBe(429);
    expect((await namespaces(app, notYetUsed)).status).toBe(429);
    expect(lookups).not.toHaveBeenCalled();

    expect((await namespaces(app, inUse)).status).toBe(200);
    // Sending no key at all looks nothing up: it stays a plain 401.
    expect((await namespaces(app, null)).status).toBe(401);
  });

  it("a read of one tenant at Grantd-Consistency: full refuses its key revoked elsewhere, and leaves another tenant's verified key exempt", async () => {
    const { keys, app } = fresh();
    const [one, other] = [await newTenant(services), await newTenant(services)];
    const revoked = await createKey(services.db, one.id, 'revoked', ['grant:read']);
    for (const key of [revoked.secret, other.adminKey]) expect((await namespaces(app, key)).status).toBe(200);
    await exhaust(app);

    // Revoked on another node: a full read of its tenant looks it up again and refuses it.
    await revokeKey(services.db, one.id, revoked.id);
    const lookups = vi.spyOn(keys, 'verify');
    expect((await namespaces(app, revoked.secret).set('Grantd-Consistency', 'full')).status).toBe(401);
    // The other tenant's key is still held verified: no lookup, and exempt from the address's refusal.
    expect((await namespaces(app, other.adminKey)).status).toBe(200);
    expect(lookups.mock.calls.map(([credential]) => credential)).toEqual([keys.credentialOf(revoked.secret)]);
  });

  it('counts attempts as they arrive: of 40 wrong secrets sent at once against a limit of 20, 20 are looked up and answered 401, 20 answered 429', async () => {
    const { keys, app } = fresh(20);
    // Every lookup waits until each request has either reached its lookup or been answered: all 40 are in flight at once.
    let pending = 40;
    let allIn!: () => void;
    const gate = new Promise<void>((resolve) => (allIn = resolve));
    const arrived = () => {
      if (--pending === 0) allIn();
    };
    const verify = keys.verify.bind(keys);
    const lookups = vi.spyOn(keys, 'verify').mockImplementation(async (credential) => {
      arrived();
      await gate;
      return verify(credential);
    });
    const answers = await Promise.all(
      Array.from({ length: 40 }, () =>
        namespaces(app, newSecret()).then((res) => {
          arrived(); // a request answered without a lookup (after one, the gate is open already)
          return res;
        }),
      ),
    );
    expect(lookups).toHaveBeenCalledTimes(20);
    const statuses = answers.map((res) => res.status);
    expect(statuses.filter((status) => status === 401)).toHaveLength(20);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    for (const res of answers.filter((answer) => answer.status === 429)) expect(Number(res.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  });

  it('does not count a key found: keys looked up for the first time do not use up the limit', async () => {
    const { app } = fresh();
    const tenant = await newTenant(services);
    for (let i = 0; i < 5; i++) expect((await namespaces(app, await tenant.keyWith('grant:read'))).status).toBe(200);
    await exhaust(app);
  });

  it('neither counts nor refuses keys found live lately and no longer held: a backend checks for many tenants, each with its key, from one address', async () => {
    const { keys, app } = fresh();
    const tenants = await Promise.all(Array.from({ length: 8 }, () => newTenant(services)));
    const inUse = await Promise.all(tenants.map((tenant) => tenant.keyWith('grant:read')));
    for (const key of inUse) expect((await namespaces(app, key)).status).toBe(200);
    // Their verifications lapse (as past 500 ms, here at once): each use is a lookup again.
    keys.forgetAll();
    // Eight lookups under way at once, against a limit of three failures: none is one.
    expect((await Promise.all(inUse.map((key) => namespaces(app, key)))).map((res) => res.status)).toEqual(inUse.map(() => 200));
    await exhaust(app);
    keys.forgetAll();
    const lookups = vi.spyOn(keys, 'verify');
    expect((await namespaces(app, inUse[0]!)).status).toBe(200);
    expect(lookups).toHaveBeenCalledTimes(1);
  });

  it('counts the peer address, and believes X-Forwarded-For only from configured proxies', async () => {
    const { app, behindProxy } = fresh();
    await exhaust(app);
    // The peer (127.0.0.1) is past its limit; a forged header does not help it.
    expect((await namespaces(app, newSecret(), '203.0.113.7')).status).toBe(429);
    // Behind a trusted proxy on loopback, each forwarded client has its own count.
    expect((await namespaces(behindProxy, newSecret(), '203.0.113.7')).status).toBe(401);
    expect((await namespaces(behindProxy, newSecret(), '2001:db8:1:2::7')).status).toBe(401);
  });
});
