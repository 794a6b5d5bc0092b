import { beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { client, DOCUMENT_NAMESPACE, newTenant, tenantSnapshot, useApp, type TestTenant } from '../helpers.ts';
import { contractRoutes } from './routes.ts';

/**
 * Tenant B's admin key against everything tenant A owns, for every route of the contract:
 * absent or empty, never A's data, and A's data untouched afterwards.
 */
const { services, app } = useApp();
let tenantA: TestTenant;
let a: ReturnType<typeof client>;
// A tenant B of each test's own, so that what one attempt makes in B (a namespace, an agent) is not there for another.
let bKey: string;
const b = client(app, () => bKey);
let aKeyId: string;
let aCursor: string;
let aClientId: string;

const aGrant = { subject: 'user:alice', relation: 'owner', object: 'document:secret' };
const aAgentGrant = { subject: 'agent:bot', relation: 'viewer', object: 'document:secret' };

beforeAll(async () => {
  tenantA = await newTenant(services);
  a = client(app, tenantA.adminKey);
  await a.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  // A namespace B never creates: B's reads and changes of it must find nothing.
  await a.post('/v1/namespaces', { name: 'afolder', relations: { viewer: {} } }).expect(201);
  await a.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
  await a.post('/v1/grants/batch', { writes: [aGrant, aAgentGrant, { ...aGrant, object: 'document:secret2' }] }).expect(200);
  aKeyId = (await a.post('/v1/keys', { label: 'a-key' })).body.id;
  aCursor = (await a.get('/v1/grants?limit=1')).body.next_cursor;
  aClientId = (await a.post('/v1/oauth/clients', { name: 'a-client', type: 'confidential', scopes: ['check:read'], agent: 'bot' })).body.client_id;
});
beforeEach(async () => {
  bKey = (await newTenant(services)).adminKey;
});

interface Outcome {
  status: number;
  body: unknown;
}
/** For each contract route, B's request naming A's things, and what B must get. */
const attempts: Record<string, { send: () => Promise<Outcome>; expect: (res: Outcome) => void }> = {
  check: { send: () => b.post('/v1/check', aGrant), expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }) },
  checkBulk: {
    send: () => b.post('/v1/check/bulk', { checks: [aGrant, aAgentGrant] }),
    expect: (r) =>
      expect((r.body as { results: unknown[] }).results).toEqual([
        expect.objectContaining({ allowed: false }),
        expect.objectContaining({ allowed: false }),
      ]),
  },
  'objects.list': {
    send: () => b.get('/v1/objects?namespace=document&subject=user:alice&relation=owner'),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  explain: {
    send: () => b.post('/v1/check/explain', aGrant),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  'subjects.list': {
    send: () => b.get('/v1/subjects?object=document:secret&relation=owner&subject_namespace=user'),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  'grants.create': {
    send: () => b.post('/v1/grants', aGrant),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  'grants.revoke': { send: () => b.delete('/v1/grants', aGrant), expect: (r) => expect(r.status).toBe(204) },
  'grants.list': {
    send: () => b.get('/v1/grants?subject=user:alice'),
    expect: (r) => expect(r).toMatchObject({ status: 200, body: { grants: [], next_cursor: null } }),
  },
  'grants.batch': {
    send: () => b.post('/v1/grants/batch', { deletes: [aGrant, aAgentGrant] }),
    expect: (r) => expect(r).toMatchObject({ status: 200, body: { written: 0, deleted: 0 } }),
  },
  'namespaces.create': {
    send: () => b.post('/v1/namespaces', { name: 'document' }),
    expect: (r) => expect(r.status).toBe(201),
  },
  'namespaces.list': {
    send: () => b.get('/v1/namespaces'),
    expect: (r) => expect((r.body as { namespaces: { relations: unknown }[] }).namespaces.every((n) => n.relations === null)).toBe(true),
  },
  'namespaces.get': {
    send: () => b.get('/v1/namespaces/afolder'),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  'namespaces.update': {
    send: () => b.put('/v1/namespaces/afolder', {}),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  'namespaces.delete': {
    send: () => b.delete('/v1/namespaces/afolder'),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'namespace-not-found' } }),
  },
  'agents.create': { send: () => b.post('/v1/agents', { external_id: 'bot', scope: [] }), expect: (r) => expect(r.status).toBe(201) },
  'agents.list': {
    send: () => b.get(`/v1/agents?cursor=${encodeURIComponent(aCursor)}`),
    expect: (r) => expect(r).toMatchObject({ status: 400, body: { type: 'invalid-cursor' } }),
  },
  'agents.get': {
    // B's own agent of the same name: B sees its scope, not A's.
    send: async () => {
      await b.post('/v1/agents', { external_id: 'bot', scope: [] }).expect(201);
      return b.get('/v1/agents/bot');
    },
    expect: (r) => expect((r.body as { scope: string[] }).scope).toEqual([]),
  },
  'agents.delete': {
    send: async () => {
      await b.delete('/v1/agents/bot');
      return b.delete('/v1/agents/bot');
    },
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'agent-not-found' } }),
  },
  'keys.create': { send: () => b.post('/v1/keys', { label: 'b' }), expect: (r) => expect(r.status).toBe(201) },
  'keys.list': {
    send: () => b.get('/v1/keys'),
    expect: (r) => expect((r.body as { keys: { id: string }[] }).keys.map((k) => k.id)).not.toContain(aKeyId),
  },
  'keys.revoke': {
    send: () => b.delete(`/v1/keys/${aKeyId}`),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'key-not-found' } }),
  },
  'changes.list': {
    send: () => b.get('/v1/changes?limit=1000'),
    // B's own changes only: nothing that names A's key, client, grants or namespaces.
    expect: (r) => {
      expect(r.status).toBe(200);
      const text = JSON.stringify(r.body);
      for (const of of [aKeyId, aClientId, 'document:secret', 'afolder']) expect(text).not.toContain(of);
    },
  },
  'oauth.clients.create': {
    send: () => b.post('/v1/oauth/clients', { name: 'b', type: 'confidential', scopes: ['check:read'], agent: 'bot' }),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'agent-not-found' } }),
  },
  'oauth.clients.list': { send: () => b.get('/v1/oauth/clients'), expect: (r) => expect(r).toMatchObject({ status: 200, body: { clients: [] } }) },
  'oauth.clients.delete': {
    send: () => b.delete(`/v1/oauth/clients/${aClientId}`),
    expect: (r) => expect(r).toMatchObject({ status: 404, body: { type: 'client-not-found' } }),
  },
};

describe('cross-tenant access, every route of the contract', () => {
  it('has an attempt for every route', () => {
    expect(Object.keys(attempts).sort()).toEqual(
      contractRoutes()
        .map((r) => r.name)
        .sort(),
    );
  });

  it.each(contractRoutes())('$name: B gets nothing of A and changes nothing of A', async ({ name }) => {
    const before = await tenantSnapshot(services, tenantA.id);
    const res = await attempts[name]!.send();
    attempts[name]!.expect(res);
    const text = JSON.stringify(res.body);
    for (const mark of ['document:secret', 'a-key']) expect(text).not.toContain(mark);
    expect(await tenantSnapshot(services, tenantA.id)).toBe(before);
    expect((await a.post('/v1/check', aGrant)).body).toEqual({ allowed: true });
    expect((await a.post('/v1/check', aAgentGrant)).body).toEqual({ allowed: true });
  });

  it('cannot replay A cursors', async () => {
    const res = await b.get(`/v1/grants?limit=1&cursor=${encodeURIComponent(aCursor)}`);
    expect(res.body.type).toBe('invalid-cursor');
  });
});
