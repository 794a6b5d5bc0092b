import { beforeAll, describe, expect, it } from 'vitest';
import { client, DOCUMENT_NAMESPACE, newTenant, useTenant } from '../helpers.ts';

const { services, app, api } = useTenant();

beforeAll(async () => {
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/namespaces', { name: 'folder', relations: { viewer: {} } }).expect(201);
  await api.post('/v1/namespaces', { name: 'group', relations: { member: {} } }).expect(201);
  await api
    .post('/v1/grants/batch', {
      writes: [
        { subject: 'user:alice', relation: 'owner', object: 'document:q3' },
        { subject: 'folder:f1', relation: 'parent', object: 'document:d2' },
        { subject: 'group:eng', relation: 'viewer', object: 'folder:f1' },
        { subject: 'user:bob', relation: 'member', object: 'group:eng' },
      ],
    })
    .expect(200);
});

describe('POST /v1/check', () => {
  it.each([
    ['a direct grant', 'user:alice', 'owner', 'document:q3', true],
    ['an included relation', 'user:alice', 'viewer', 'document:q3', true],
    ['a parent arrow through a group', 'user:bob', 'viewer', 'document:d2', true],
    ['no path', 'user:carol', 'viewer', 'document:q3', false],
    ['an unregistered agent', 'agent:nobody', 'viewer', 'document:q3', false],
  ])('answers %s', async (_, subject, relation, object, allowed) => {
    const res = await api.post('/v1/check', { subject, relation, object });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ allowed });
  });

  it.each([
    ['invalid-subject', { subject: 'alice', relation: 'viewer', object: 'document:q3' }],
    ['invalid-object', { subject: 'user:alice', relation: 'viewer', object: 'q3' }],
    ['invalid-request', { subject: 'user:alice', object: 'document:q3' }],
    ['invalid-request', { subject: 'user:alice', relation: 'Viewer', object: 'document:q3' }],
    ['invalid-request', { subject: 1, relation: 'viewer', object: 'document:q3' }],
    ['unknown-relation', { subject: 'user:alice', relation: 'member', object: 'document:q3' }],
  ])('answers 400 %s', async (type, body) => {
    const res = await api.post('/v1/check', body);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.body).toMatchObject({ type, status: 400, title: expect.any(String), detail: expect.any(String) });
  });

  it("answers an undeclared relation with the namespace's relations, and the one a typo meant", async () => {
    const typo = await api.post('/v1/check', { subject: 'user:alice', relation: 'veiwer', object: 'document:q3' });
    expect(typo.body).toMatchObject({
      type: 'unknown-relation',
      detail: 'namespace document declares no relation veiwer (did you mean viewer?); it declares editor, owner, parent, viewer',
    });
    const other = await api.post('/v1/check', { subject: 'user:alice', relation: 'member', object: 'document:q3' });
    expect(other.body.detail).toBe('namespace document declares no relation member; it declares editor, owner, parent, viewer');
  });

  it('answers 404 namespace-not-found for an unknown object namespace', async () => {
    const res = await api.post('/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'nothing:q3' });
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('namespace-not-found');
  });
});

describe('POST /v1/check/bulk', () => {
  it('answers every item in order, with per-item errors', async () => {
    const res = await api.post('/v1/check/bulk', {
      checks: [
        { subject: 'user:alice', relation: 'viewer', object: 'document:q3' },
        { subject: 'user:alice', relation: 'viewer', object: 'nothing:q3' },
        { subject: 'user:bob', relation: 'viewer', object: 'document:d2' },
        { subject: 'user:bob', relation: 'member', object: 'document:d2' },
        { subject: 'user:carol', relation: 'viewer', object: 'document:d2' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      results: [
        { allowed: true },
        { allowed: false, error: { type: 'namespace-not-found', detail: expect.any(String) } },
        { allowed: true },
        { allowed: false, error: { type: 'unknown-relation', detail: expect.any(String) } },
        { allowed: false },
      ],
    });
  });

  it('answers 1000 items', async () => {
    const checks = Array.from({ length: 1000 }, (_, i) => ({ subject: `user:u${i}`, relation: 'viewer', object: 'document:q3' }));
    checks[999] = { subject: 'user:alice', relation: 'viewer', object: 'document:q3' };
    const res = await api.post('/v1/check/bulk', { checks });
    expect(res.status).toBe(200);
    expect(res.body.results).toHaveLength(1000);
    expect(res.body.results.filter((r: { allowed: boolean }) => r.allowed)).toHaveLength(1);
    expect(res.body.results[999]).toEqual({ allowed: true });
  });

  it.each([
    ['no checks', { checks: [] }, 'invalid-request'],
    [
      '1001 checks',
      { checks: Array.from({ length: 1001 }, () => ({ subject: 'user:a', relation: 'viewer', object: 'document:q3' })) },
      'invalid-request',
    ],
    ['a malformed subject', { checks: [{ subject: 'a', relation: 'viewer', object: 'document:q3' }] }, 'invalid-subject'],
    ['a malformed object', { checks: [{ subject: 'user:a', relation: 'viewer', object: 'q3' }] }, 'invalid-object'],
  ])('answers 400 for %s', async (_, body, type) => {
    const res = await api.post('/v1/check/bulk', body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(type);
  });
});

describe('a check past the work budget', () => {
  // Every node the parent of every other, four relations each including four arrows over parent:
  // a denied check would read ~40,000 parent grants, past the default budget of 25,000 steps.
  const FAN_OUT = Object.fromEntries([['parent', {}], ...[1, 2, 3, 4].map((r) => [`r${r}`, { includes: [1, 2, 3, 4].map((t) => `parent->r${t}`) }])]);
  let fan: ReturnType<typeof client>;

  beforeAll(async () => {
    const tenant = await newTenant(services);
    fan = client(app, tenant.adminKey);
    await fan.post('/v1/namespaces', { name: 'node', relations: FAN_OUT }).expect(201);
    const writes = [];
    for (let a = 0; a < 100; a++)
      for (let b = 0; b < 100; b++) if (a !== b) writes.push({ subject: `node:n${a}`, relation: 'parent', object: `node:n${b}` });
    writes.push({ subject: 'user:owner', relation: 'r1', object: 'node:n0' });
    // A subject the graph knows, who holds nothing on nodes: its checks walk everything.
    writes.push({ subject: 'user:stranger', relation: 'viewer', object: 'user:elsewhere' });
    for (let i = 0; i < writes.length; i += 1000) await fan.post('/v1/grants/batch', { writes: writes.slice(i, i + 1000) }).expect(200);
    expect(await services.heldTenants.load(tenant.id)).toBe(true);
  });

  it('is 422 check-too-complex, naming the budget', async () => {
    const res = await fan.post('/v1/check', { subject: 'user:owner', relation: 'r1', object: 'node:n7' });
    expect(res.body).toEqual({ allowed: true });
    const refused = await fan.post('/v1/check', { subject: 'user:stranger', relation: 'r1', object: 'node:n7' });
    expect(refused.status).toBe(422);
    expect(refused.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(refused.body).toEqual({
      type: 'check-too-complex',
      title: 'Check too complex',
      status: 422,
      detail: expect.stringContaining('more than 25000 steps'),
    });
  });

  it("is that item's error in a bulk, whose other items are answered", async () => {
    const res = await fan.post('/v1/check/bulk', {
      checks: [
        { subject: 'user:owner', relation: 'r2', object: 'node:n9' },
        { subject: 'user:stranger', relation: 'r2', object: 'node:n9' },
        { subject: 'user:owner', relation: 'r3', object: 'node:n10' },
      ],
    });
    expect(res.status).toBe(200);
    expect(res.body.results).toEqual([
      { allowed: true },
      { allowed: false, error: { type: 'check-too-complex', detail: expect.stringContaining('25000') } },
      { allowed: true },
    ]);
  });
});
