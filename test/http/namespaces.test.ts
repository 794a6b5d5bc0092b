import { describe, expect, it } from 'vitest';
import { client, DOCUMENT_NAMESPACE, newTenant, useTenant } from '../helpers.ts';

// A tenant per test, so that each test runs alone and in any order.
const { services, app, api } = useTenant({ each: true });

describe('POST /v1/namespaces', () => {
  it('creates a namespace with relations and answers 201 with its record', async () => {
    const res = await api.post('/v1/namespaces', DOCUMENT_NAMESPACE);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({ ...DOCUMENT_NAMESPACE, created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/), updated_at: res.body.created_at });
  });

  it('creates an open namespace with relations null', async () => {
    const res = await api.post('/v1/namespaces', { name: 'folder' });
    expect(res.status).toBe(201);
    expect(res.body.relations).toBeNull();
  });

  it('answers 409 namespace-exists for an existing name, including the built-in user and agent', async () => {
    await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
    for (const name of ['document', 'user', 'agent']) {
      const res = await api.post('/v1/namespaces', { name });
      expect(res.status).toBe(409);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ type: 'namespace-exists', status: 409, title: expect.any(String), detail: expect.any(String) });
    }
  });

  it.each([
    ['an unknown same-object relation', { a: { includes: ['b'] } }],
    ['an arrow through an undeclared relation', { viewer: { includes: ['parent->viewer'] } }],
    ['a cycle', { a: { includes: ['b'] }, b: { includes: ['c'] }, c: { includes: ['a'] } }],
    ['a relation including itself', { a: { includes: ['a'] } }],
  ])('answers 400 invalid-namespace for %s', async (_, relations) => {
    const res = await api.post('/v1/namespaces', { name: 'broken', relations });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-namespace');
  });

  it.each([
    ['a bad name', { name: 'Document' }],
    ['a missing name', {}],
    ['a malformed include', { name: 'x', relations: { a: { includes: ['->b'] } } }],
    ['an unknown field', { name: 'x', extra: 1 }],
  ])('answers 400 invalid-request for %s', async (_, body) => {
    const res = await api.post('/v1/namespaces', body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-request');
    expect(res.body.errors.length).toBeGreaterThan(0);
  });
});

describe('requires and excludes (docs/model.md#requires-and-excludes)', () => {
  const GUARDED = {
    name: 'document',
    relations: {
      parent: {},
      owner: {},
      blocked: {},
      org: {},
      editor: { includes: ['owner'], excludes: ['blocked'] },
      viewer: { includes: ['editor', 'parent->viewer'], requires: ['org->member'], excludes: ['blocked'] },
    },
  };

  it('accepts them, and GET /v1/namespaces/:name returns them as given', async () => {
    expect((await api.post('/v1/namespaces', GUARDED)).status).toBe(201);
    const res = await api.get('/v1/namespaces/document');
    expect(res.status).toBe(200);
    expect(res.body.relations).toEqual(GUARDED.relations);
  });

  it('answers 400 invalid-namespace with the path of an unknown relation under requires or excludes', async () => {
    const res = await api.post('/v1/namespaces', { name: 'broken', relations: { org: {}, viewer: { requires: ['org->member', 'member'] } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      type: 'invalid-namespace',
      detail: 'relations.viewer.requires[1]: relation viewer requires "member", but member is not declared',
      errors: [{ path: 'relations.viewer.requires[1]', message: 'relation viewer requires "member", but member is not declared' }],
    });
    const excluded = await api.post('/v1/namespaces', { name: 'broken', relations: { viewer: { excludes: ['parent->viewer'] } } });
    expect(excluded.body).toMatchObject({ type: 'invalid-namespace', errors: [{ path: 'relations.viewer.excludes[0]' }] });
  });

  it('answers 400 invalid-namespace for relations requiring each other on the same object', async () => {
    const res = await api.post('/v1/namespaces', { name: 'broken', relations: { a: { requires: ['b'] }, b: { requires: ['a'] } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-namespace', detail: expect.stringContaining('a requires b -> b requires a -> a') });
  });

  it("answers 400 invalid-namespace naming a cycle through an exclusion, closed by a create or a change, across the tenant's namespaces", async () => {
    await api.post('/v1/namespaces', { name: 'folder', relations: { child: {}, banned: { includes: ['child->viewer'] } } }).expect(201);
    const document = { parent: {}, viewer: { excludes: ['parent->banned'] } };
    const cycle = 'document#viewer excludes parent->banned -> folder#banned includes child->viewer -> document#viewer';
    const created = await api.post('/v1/namespaces', { name: 'document', relations: document });
    expect(created.status).toBe(400);
    expect(created.body).toMatchObject({ type: 'invalid-namespace', detail: expect.stringContaining(cycle) });
    expect((await api.get('/v1/namespaces/document')).status).toBe(404);

    // Without the way back it is accepted; the change of folder that would close the cycle is refused, and changes nothing.
    await api.put('/v1/namespaces/folder', { relations: { child: {}, banned: {} } }).expect(200);
    await api.post('/v1/namespaces', { name: 'document', relations: document }).expect(201);
    const changed = await api.put('/v1/namespaces/folder', { relations: { child: {}, banned: { includes: ['child->viewer'] } } });
    expect(changed.status).toBe(400);
    expect(changed.body).toMatchObject({ type: 'invalid-namespace', detail: expect.stringContaining(cycle) });
    expect((await api.get('/v1/namespaces/folder')).body.relations).toEqual({ child: {}, banned: {} });
  });

  it('answers 400 invalid-namespace for a relation whose exclusion leads back to it through its own arrow', async () => {
    const relations = { parent: {}, viewer: { includes: ['writer'] }, writer: { excludes: ['parent->viewer'] } };
    const res = await api.post('/v1/namespaces', { name: 'document', relations });
    expect(res.status).toBe(400);
    expect(res.body.detail).toMatch(/document#writer excludes parent->viewer -> document#viewer includes writer -> document#writer$/);
  });
});

describe('GET /v1/namespaces', () => {
  it('lists the tenant namespaces by name, built-ins included', async () => {
    await api.post('/v1/namespaces', { name: 'folder' }).expect(201);
    await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
    const res = await api.get('/v1/namespaces');
    expect(res.status).toBe(200);
    const names = res.body.namespaces.map((n: { name: string }) => n.name);
    expect(names).toEqual(['agent', 'document', 'folder', 'user']);
  });

  it('shows nothing of another tenant', async () => {
    await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
    const other = await newTenant(services);
    const res = await client(app, other.adminKey).get('/v1/namespaces');
    expect(res.body.namespaces.map((n: { name: string }) => n.name)).toEqual(['agent', 'user']);
  });
});

describe('relation names that are also Object.prototype members', () => {
  it('are ordinary relations, and undeclared ones stay unknown', async () => {
    const relations = { constructor: {}, viewer: { includes: ['constructor'] } };
    expect((await api.post('/v1/namespaces', { name: 'protoish', relations })).status).toBe(201);
    await api.post('/v1/grants', { subject: 'user:alice', relation: 'constructor', object: 'protoish:p1' }).expect(201);
    expect((await api.post('/v1/check', { subject: 'user:alice', relation: 'viewer', object: 'protoish:p1' })).body).toEqual({ allowed: true });
    expect((await api.post('/v1/check', { subject: 'user:alice', relation: 'tostring', object: 'protoish:p1' })).body.type).toBe('unknown-relation');
    expect((await api.post('/v1/check', { subject: 'user:alice', relation: 'valueof', object: 'protoish:p1' })).body.type).toBe('unknown-relation');
  });
});

describe('the limits of a model', () => {
  const relations = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`r${i}`, {}]));

  it('answers 400 for a namespace of more than 64 relations, naming the limit', async () => {
    expect((await api.post('/v1/namespaces', { name: 'wide64', relations: relations(64) })).status).toBe(201);
    const res = await api.post('/v1/namespaces', { name: 'wide65', relations: relations(65) });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', detail: expect.stringContaining('at most 64 relations per namespace') });
  });

  it('answers 400 for a relation of more than 16 includes, naming the limit', async () => {
    const includes = (count: number) => Array.from({ length: count }, (_, i) => `r${i}`);
    const ok = await api.post('/v1/namespaces', { name: 'deep16', relations: { ...relations(17), top: { includes: includes(16) } } });
    expect(ok.status).toBe(201);
    const res = await api.post('/v1/namespaces', { name: 'deep17', relations: { ...relations(17), top: { includes: includes(17) } } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', detail: expect.stringContaining('at most 16 references per list') });
  });

  it('answers 400 past 100 namespaces in a tenant besides user and agent, also to creates racing for the last places', async () => {
    for (let i = 0; i < 95; i++) expect((await api.post('/v1/namespaces', { name: `n${i}` })).status).toBe(201);
    const racing = await Promise.all(Array.from({ length: 10 }, (_, i) => api.post('/v1/namespaces', { name: `late${i}` })));
    expect(racing.map((r) => r.status).sort()).toEqual([...Array(5).fill(201), ...Array(5).fill(400)]);
    const refused = racing.find((r) => r.status === 400)!;
    expect(refused.body).toMatchObject({
      type: 'invalid-request',
      detail: 'a tenant holds at most 100 namespaces besides user and agent, and this one holds 100',
    });
    const listed = await api.get('/v1/namespaces');
    expect(listed.body.namespaces).toHaveLength(102);
    // Creating user or agent again is still the conflict it always was.
    expect((await api.post('/v1/namespaces', { name: 'user' })).status).toBe(409);
  });

  it('answers 400 past 10,000 compiled rows in a tenant, naming the limit and the rows, also to creates racing for the last rows', async () => {
    // A chain of `length` relations, each including the one before it (length * (length + 1) / 2 closure rows),
    // the first `arrowed` of them with 15 arrows each.
    const chain = (length: number, arrowed: number) =>
      Object.fromEntries(
        Array.from({ length }, (_, i) => {
          const arrows = i < arrowed ? Array.from({ length: 15 }, (_, j) => `c${j}->t`) : [];
          return [`c${i}`, { includes: [...(i > 0 ? [`c${i - 1}`] : []), ...arrows] }];
        }),
      );
    for (const name of ['big0', 'big1', 'big2']) expect((await api.post('/v1/namespaces', { name, relations: chain(64, 64) })).status).toBe(201);
    const refused = await api.post('/v1/namespaces', { name: 'big3', relations: chain(64, 64) });
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      type: 'invalid-request',
      detail:
        "a tenant's model compiles to at most 10000 rows (closure rows and arrows of all its namespaces), " +
        "and with this namespace this one's would compile to 12160",
    });

    // 9,120 rows held: of two creates of 880 rows each, the first to take the tenant's lock fills the model exactly.
    const racing = await Promise.all(['last0', 'last1'].map((name) => api.post('/v1/namespaces', { name, relations: chain(40, 4) })));
    expect(racing.map((r) => r.status).sort()).toEqual([201, 400]);
    expect(racing.find((r) => r.status === 400)!.body.detail).toMatch(/would compile to 10880$/);
    expect((await api.post('/v1/namespaces', { name: 'one', relations: { r: {} } })).body.detail).toMatch(/would compile to 10001$/);
    // An open namespace compiles to no rows.
    expect((await api.post('/v1/namespaces', { name: 'open' })).status).toBe(201);
  });
});
