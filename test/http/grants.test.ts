import { beforeAll, describe, expect, it } from 'vitest';
import { client, DOCUMENT_NAMESPACE, newTenant, useApp } from '../helpers.ts';

const { services, app } = useApp();
let api: ReturnType<typeof client>;

beforeAll(async () => {
  const tenant = await newTenant(services);
  api = client(app, tenant.adminKey);
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/namespaces', { name: 'repo' }).expect(201);
  await api.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
});

const triple = { subject: 'user:alice', relation: 'owner', object: 'document:q3' };

describe('POST /v1/grants', () => {
  it('creates a grant with 201, then answers the same triple with 200 and the original body', async () => {
    const first = await api.post('/v1/grants', triple);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ ...triple, created_at: expect.stringMatching(/Z$/) });
    const again = await api.post('/v1/grants', triple);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('accepts any relation in an open namespace and grants to registered agents', async () => {
    expect((await api.post('/v1/grants', { subject: 'user:alice', relation: 'maintainer', object: 'repo:r1' })).status).toBe(201);
    expect((await api.post('/v1/grants', { subject: 'agent:bot', relation: 'viewer', object: 'document:q3' })).status).toBe(201);
  });

  it.each([
    [400, 'invalid-subject', { ...triple, subject: 'alice' }],
    [400, 'invalid-object', { ...triple, object: 'document' }],
    [400, 'invalid-request', { subject: 'user:alice', object: 'document:q3' }],
    [400, 'invalid-request', { ...triple, extra: true }],
    [400, 'unknown-relation', { ...triple, relation: 'member' }],
    [404, 'namespace-not-found', { ...triple, object: 'nothing:q3' }],
    [404, 'agent-not-found', { ...triple, subject: 'agent:ghost' }],
    [404, 'agent-not-found', { subject: 'user:alice', relation: 'owner', object: 'agent:ghost' }],
  ])('answers %i %s', async (status, type, body) => {
    const res = await api.post('/v1/grants', body);
    expect(res.status).toBe(status);
    expect(res.body.type).toBe(type);
  });
});

describe('DELETE /v1/grants', () => {
  it('revokes with 204, and 204 again when it is gone', async () => {
    const t = { subject: 'user:dave', relation: 'owner', object: 'document:gone' };
    await api.post('/v1/grants', t).expect(201);
    expect((await api.delete('/v1/grants', t)).status).toBe(204);
    expect((await api.post('/v1/check', { ...t, relation: 'viewer' })).body).toEqual({ allowed: false });
    const again = await api.delete('/v1/grants', t);
    expect(again.status).toBe(204);
    expect(again.text).toBe('');
  });

  it('answers 400 for a malformed triple', async () => {
    expect((await api.delete('/v1/grants', { ...triple, subject: 'x' })).body.type).toBe('invalid-subject');
    expect((await api.delete('/v1/grants', { subject: 'user:a' })).body.type).toBe('invalid-request');
  });
});

describe('POST /v1/grants/batch', () => {
  it('writes and deletes, counting only real changes', async () => {
    await api.post('/v1/grants', { subject: 'user:erin', relation: 'owner', object: 'document:b1' }).expect(201);
    const res = await api.post('/v1/grants/batch', {
      writes: [
        { subject: 'user:erin', relation: 'owner', object: 'document:b1' },
        { subject: 'user:erin', relation: 'owner', object: 'document:b2' },
        { subject: 'user:erin', relation: 'owner', object: 'document:b2' },
        { subject: 'user:erin', relation: 'owner', object: 'document:b3' },
      ],
      deletes: [
        { subject: 'user:erin', relation: 'owner', object: 'document:never' },
        { subject: 'user:alice', relation: 'maintainer', object: 'repo:r1' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ written: 2, deleted: 1 });
  });

  it('applies nothing when one item is invalid, answering with that item problem', async () => {
    const writes = [
      { subject: 'user:frank', relation: 'owner', object: 'document:c1' },
      { subject: 'user:frank', relation: 'member', object: 'document:c2' },
    ];
    const res = await api.post('/v1/grants/batch', { writes, deletes: [{ subject: 'user:erin', relation: 'owner', object: 'document:b1' }] });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('unknown-relation');
    const check = await api.post('/v1/check/bulk', {
      checks: [
        { subject: 'user:frank', relation: 'owner', object: 'document:c1' },
        { subject: 'user:erin', relation: 'owner', object: 'document:b1' },
      ],
    });
    expect(check.body.results).toEqual([{ allowed: false }, { allowed: true }]);
    const agent = await api.post('/v1/grants/batch', { writes: [writes[0], { subject: 'agent:ghost', relation: 'viewer', object: 'document:c1' }] });
    expect(agent.status).toBe(404);
    expect(agent.body.type).toBe('agent-not-found');
    expect((await api.post('/v1/check', writes[0])).body).toEqual({ allowed: false });
  });

  it.each([
    ['an empty batch', {}],
    ['1001 triples', { writes: Array.from({ length: 1001 }, (_, i) => ({ subject: `user:u${i}`, relation: 'owner', object: 'document:x' })) }],
    ['a triple both written and deleted', { writes: [triple], deletes: [triple] }],
  ])('answers 400 invalid-request for %s', async (_, body) => {
    const res = await api.post('/v1/grants/batch', body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-request');
  });

  it('answers batches that lock the same grants in opposite orders at once, none with an error', async () => {
    // PostgreSQL aborts one of two transactions waiting for each other's rows (a deadlock); the
    // server writes in key order and runs an aborted transaction again, so both callers get 200.
    for (let round = 0; round < 8; round++) {
      const writes = Array.from({ length: 200 }, (_, i) => ({ subject: `user:race${round}_${i}`, relation: 'viewer', object: 'document:race' }));
      const [a, b] = await Promise.all([api.post('/v1/grants/batch', { writes }), api.post('/v1/grants/batch', { writes: [...writes].reverse() })]);
      expect([a.status, b.status], JSON.stringify([a.body, b.body])).toEqual([200, 200]);
      expect(a.body.written + b.body.written).toBe(200);

      // Each deletes the grant the other writes again: no order of statements avoids the wait, only a retry.
      const [x, y] = [writes[0]!, writes[1]!];
      const [c, d] = await Promise.all([
        api.post('/v1/grants/batch', { deletes: [x], writes: [y] }),
        api.post('/v1/grants/batch', { deletes: [y], writes: [x] }),
      ]);
      expect([c.status, d.status], JSON.stringify([c.body, d.body])).toEqual([200, 200]);
      // As if one ran after the other: exactly one of the two grants is left.
      const left = await api.post('/v1/check/bulk', { checks: [x, y] });
      expect(left.body.results.filter((r: { allowed: boolean }) => r.allowed)).toHaveLength(1);
    }
  });

  it('accepts 1000 triples', async () => {
    const writes = Array.from({ length: 1000 }, (_, i) => ({ subject: `user:k${i}`, relation: 'viewer', object: 'document:big' }));
    const res = await api.post('/v1/grants/batch', { writes });
    expect(res.body).toEqual({ written: 1000, deleted: 0 });
  });
});

describe('GET /v1/grants', () => {
  it('filters by subject, relation, object and namespace', async () => {
    const bySubject = await api.get('/v1/grants?subject=user:erin');
    expect(bySubject.status).toBe(200);
    expect(bySubject.body.grants.map((g: { object: string }) => g.object)).toEqual(['document:b1', 'document:b2', 'document:b3']);
    expect(bySubject.body.next_cursor).toBeNull();
    const byObject = await api.get('/v1/grants?object=document:q3&relation=viewer');
    expect(byObject.body.grants).toEqual([{ subject: 'agent:bot', relation: 'viewer', object: 'document:q3', created_at: expect.any(String) }]);
    const byNamespace = await api.get('/v1/grants?namespace=repo');
    expect(byNamespace.body.grants).toEqual([]);
  });

  it('pages in a stable order', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const res = await api.get(`/v1/grants?object=document:big&limit=300${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      expect(res.status).toBe(200);
      seen.push(...res.body.grants.map((g: { subject: string }) => g.subject));
      cursor = res.body.next_cursor;
    } while (cursor);
    expect(seen).toHaveLength(1000);
    expect(seen).toEqual([...seen].sort());
    expect(new Set(seen).size).toBe(1000);
  });

  it('refuses a cursor of another filter', async () => {
    const first = await api.get('/v1/grants?object=document:big&limit=1');
    const res = await api.get(`/v1/grants?object=document:q3&limit=1&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-cursor');
  });

  it.each([
    ['subject=alice', 'invalid-subject'],
    ['object=q3', 'invalid-object'],
    ['limit=0', 'invalid-request'],
    ['limit=1e1', 'invalid-request'],
    ['subjet=user:a', 'invalid-request'],
    ['cursor=', 'invalid-cursor'],
  ])('answers 400 for ?%s', async (query, type) => {
    const res = await api.get(`/v1/grants?${query}`);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(type);
  });
});
