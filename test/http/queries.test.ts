import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_NAMESPACE, tenantSnapshot, useTenant } from '../helpers.ts';
import { contractRoutes, expectDocumentedResponse, fillPath } from './routes.ts';

/** docs/api.md: "Bodies and queries refuse fields they do not define (400 invalid-request)", on every route. */
const { services, app, tenant, api } = useTenant();

beforeAll(async () => {
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'document:q3' }).expect(201);
});

describe('a query parameter a route does not define', () => {
  it.each(contractRoutes())('$name refuses it with 400 invalid-request naming the query', async ({ route }) => {
    const url = `${fillPath(route)}?grantd_unknown=1`;
    const res = await supertest(app)[route.method.toLowerCase() as 'get'](url).set('Authorization', `Bearer ${tenant.adminKey}`);
    expect(res.status, `${route.method} ${url}`).toBe(400);
    expect(res.body.type).toBe('invalid-request');
    expect(res.body.errors).toContainEqual({ path: 'query', message: "Unrecognized key(s) in object: 'grantd_unknown'" });
    expectDocumentedResponse(route, res);
  });

  // The new-user trial's requests, each otherwise well formed: refused, and nothing done.
  it.each([
    ['GET', '/v1/keys?x=1', undefined],
    ['GET', '/v1/namespaces?limit=1', undefined],
    ['GET', '/v1/namespaces/document?x=1', undefined],
    ['GET', '/v1/oauth/clients?x=1', undefined],
    ['POST', '/v1/check?subjet=user:bob', { subject: 'user:alice', relation: 'viewer', object: 'document:q3' }],
    ['POST', '/v1/grants?x=1', { subject: 'user:bob', relation: 'owner', object: 'document:q3' }],
    ['POST', '/v1/grants/batch?x=1', { writes: [{ subject: 'user:bob', relation: 'owner', object: 'document:q3' }] }],
    ['DELETE', '/v1/grants?x=1', { subject: 'user:alice', relation: 'owner', object: 'document:q3' }],
    ['DELETE', '/v1/keys/key_x?x=1', undefined],
  ] as const)('%s %s is 400 invalid-request and changes nothing', async (method, url, body) => {
    const before = await tenantSnapshot(services, tenant.id);
    const request = supertest(app)[method.toLowerCase() as 'get'](url).set('Authorization', `Bearer ${tenant.adminKey}`);
    const res = await (body === undefined ? request : request.send(body));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', status: 400, detail: expect.stringMatching(/^query: Unrecognized key/) });
    expect(res.body.errors).toHaveLength(1);
    expect(await tenantSnapshot(services, tenant.id)).toBe(before);
  });
});
