import { beforeAll, describe, expect, it } from 'vitest';
import { client, DOCUMENT_NAMESPACE, newTenant, useApp } from '../helpers.ts';

/** Tenant B's admin key against everything tenant A owns: absent, empty, or refused; never A's data, never a write. */
const { services, app } = useApp();
let a: ReturnType<typeof client>;
let b: ReturnType<typeof client>;
let aKeyId: string;

beforeAll(async () => {
  const tenantA = await newTenant(services);
  const tenantB = await newTenant(services);
  a = client(app, tenantA.adminKey);
  b = client(app, tenantB.adminKey);
  await a.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await a.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
  await a.post('/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'document:secret' }).expect(201);
  await a.post('/v1/grants', { subject: 'agent:bot', relation: 'viewer', object: 'document:secret' }).expect(201);
  aKeyId = (await a.post('/v1/keys', { label: 'a-key' })).body.id;
});

const aGrant = { subject: 'user:alice', relation: 'owner', object: 'document:secret' };

describe('cross-tenant access', () => {
  it('cannot check or list against A namespaces', async () => {
    expect((await b.post('/v1/check', aGrant)).body.type).toBe('namespace-not-found');
    expect((await b.post('/v1/check/bulk', { checks: [aGrant] })).body.results[0]).toMatchObject({ allowed: false, error: { type: 'namespace-not-found' } });
    expect((await b.get('/v1/objects?namespace=document&subject=user:alice&relation=owner')).status).toBe(404);
  });

  it('sees none of A grants, namespaces, agents or keys', async () => {
    expect((await b.get('/v1/grants')).body.grants).toEqual([]);
    expect((await b.get('/v1/grants?subject=user:alice')).body.grants).toEqual([]);
    expect((await b.get('/v1/namespaces')).body.namespaces.map((n: { name: string }) => n.name)).toEqual(['agent', 'user']);
    expect((await b.get('/v1/agents')).body.agents).toEqual([]);
    expect((await b.get('/v1/agents/bot')).status).toBe(404);
    expect((await b.get('/v1/keys')).body.keys.map((k: { id: string }) => k.id)).not.toContain(aKeyId);
  });

  it('cannot write to, revoke from, or kill in A', async () => {
    expect((await b.post('/v1/grants', aGrant)).body.type).toBe('namespace-not-found');
    expect((await b.post('/v1/grants', { subject: 'agent:bot', relation: 'viewer', object: 'user:x' })).body.type).toBe('agent-not-found');
    expect((await b.delete('/v1/grants', aGrant)).status).toBe(204);
    expect((await b.post('/v1/grants/batch', { deletes: [aGrant] })).body).toEqual({ written: 0, deleted: 0 });
    expect((await b.delete('/v1/agents/bot')).body.type).toBe('agent-not-found');
    expect((await b.delete(`/v1/keys/${aKeyId}`)).body.type).toBe('key-not-found');
    expect((await b.post('/v1/agents', { external_id: 'bot', scope: [] })).status).toBe(201);

    expect((await a.post('/v1/check', aGrant)).body).toEqual({ allowed: true });
    expect((await a.post('/v1/check', { subject: 'agent:bot', relation: 'viewer', object: 'document:secret' })).body).toEqual({ allowed: true });
    expect((await a.get('/v1/keys')).body.keys.map((k: { id: string }) => k.id)).toContain(aKeyId);
  });

  it('cannot replay A cursors', async () => {
    await a.post('/v1/grants', { subject: 'user:alice', relation: 'owner', object: 'document:secret2' }).expect(201);
    const page = await a.get('/v1/grants?limit=1');
    const res = await b.get(`/v1/grants?limit=1&cursor=${encodeURIComponent(page.body.next_cursor)}`);
    expect(res.body.type).toBe('invalid-cursor');
  });
});
