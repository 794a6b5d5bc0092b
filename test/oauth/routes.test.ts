import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { isAppRoute, type AppRouter } from '@ts-rest/core';
import { contract } from '../../contract/index.ts';
import { oauthRoutesServedBy } from '../../src/http/oauth/server.ts';
import { useApp } from '../helpers.ts';

const { app } = useApp();

/** The routes oidc-provider would serve with its defaults, beside the ones grantd maps onto the contract. */
const LIBRARY_DEFAULT_ROUTES = [
  ['GET', '/jwks'],
  ['GET', '/.well-known/openid-configuration'],
  ['POST', '/request'],
  ['GET', '/me'],
  ['GET', '/session/end'],
  ['POST', '/device/auth'],
  ['POST', '/reg'],
  ['POST', '/backchannel'],
  ['GET', '/auth'],
  ['POST', '/token'],
  ['POST', '/v1/oauth/authorize'],
] as const;

describe('the routes of the OAuth library', () => {
  it('are exactly the contract routes it is declared to serve, and the RFC 8414 metadata', async () => {
    const served = oauthRoutesServedBy('library')
      .map((route) => `${route.method} ${route.path}`)
      .sort();
    expect(served).toEqual(['GET /v1/oauth/authorize', 'GET /v1/oauth/authorize/:uid', 'POST /v1/oauth/revoke', 'POST /v1/oauth/token']);
    for (const route of oauthRoutesServedBy('library')) {
      const res = await supertest(app)[route.method === 'GET' ? 'get' : 'post'](route.path.replace(':uid', 'x'));
      expect(res.status, `${route.method} ${route.path}`).not.toBe(404);
    }
    expect((await supertest(app).get('/.well-known/oauth-authorization-server')).status).toBe(200);
  });

  it('do not include what the library would serve by default', async () => {
    for (const [method, path] of LIBRARY_DEFAULT_ROUTES) {
      const res = await supertest(app)[method === 'GET' ? 'get' : 'post'](path);
      // A path of the contract with another method is 405, with the methods the contract gives it.
      const known = path.startsWith('/v1/');
      expect(res.status, `${method} ${path}`).toBe(known ? 405 : 404);
      expect(res.body.type).toBe(known ? 'method-not-allowed' : 'not-found');
    }
    expect((await supertest(app).post('/v1/oauth/authorize')).headers.allow).toBe('GET, HEAD');
  });

  it('leave nothing of the contract unserved', async () => {
    for (const route of Object.values(contract.oauth as AppRouter).filter(isAppRoute)) {
      const res = await supertest(app)[route.method === 'GET' ? 'get' : 'post'](route.path.replace(':uid', 'x'));
      expect(res.status, `${route.method} ${route.path}`).not.toBe(404);
    }
  });
});
