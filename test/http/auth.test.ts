import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { KEY_SCOPES } from '../../contract/index.ts';
import { client, newTenant, useApp, type TestTenant } from '../helpers.ts';
import { contractRoutes, fillPath } from './routes.ts';

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

describe('scopes', () => {
  // Every route with every single-scope key: 403 exactly when the key lacks the route's scope.
  const cases = contractRoutes().flatMap((r) => KEY_SCOPES.map((scope) => ({ ...r, keyScope: scope })));
  it.each(cases)('$name with a $keyScope key', async ({ route, scope, keyScope }) => {
    const key = await tenant.keyWith(keyScope);
    const res = await send(key, route.method, fillPath(route), route.method === 'GET' ? undefined : {});
    const allowed = keyScope === 'admin' || keyScope === scope;
    if (allowed) {
      expect(res.status).not.toBe(403);
      expect(res.status).not.toBe(401);
    } else {
      expect(res.status).toBe(403);
      expect(res.body).toMatchObject({ type: 'insufficient-scope', status: 403 });
    }
  });
});
