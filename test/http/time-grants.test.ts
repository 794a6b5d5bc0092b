import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { client, DOCUMENT_NAMESPACE, newTenant, useServices, type TestTenant } from '../helpers.ts';

/**
 * Time-bound grants (docs/model.md#time-bound-grants) over HTTP. The server's clock is Date's, which
 * the tests set (vi.setSystemTime) to the millisecond around each window's boundaries; answers come
 * from grants held in memory and from the database alike.
 */
const inMemory = useServices();
const databaseOnly = useServices({ graphMemory: 0 });
// Each with whether it holds the tenant in memory.
const paths = [
  { name: 'in memory', services: inMemory, app: createApp(inMemory), held: true },
  { name: 'in the database', services: databaseOnly, app: createApp(databaseOnly), held: false },
];

/** A whole second some way ahead of the real clock, so that the database's own now() stays behind the server's. */
let T: number;
const at = (ms: number) => new Date(T + ms).toISOString();

beforeEach(() => {
  T = Math.ceil(Date.now() / 1000) * 1000 + 5_000;
  vi.useFakeTimers({ toFake: ['Date'], now: T });
});
afterEach(() => {
  vi.useRealTimers();
});

async function tenantOn(path: (typeof paths)[number]): Promise<{ tenant: TestTenant; api: ReturnType<typeof client> }> {
  const tenant = await newTenant(path.services);
  const api = client(path.app, tenant.adminKey);
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/namespaces', { name: 'team' }).expect(201);
  await api.post('/v1/namespaces', { name: 'folder' }).expect(201);
  return { tenant, api };
}

describe.each(paths)('time-bound grants answered $name', (path) => {
  it('confer from not_before on and up to just before expires_at, to the millisecond: directly, through a group and through an arrow', async () => {
    const { tenant, api } = await tenantOn(path);
    const window = { not_before: at(1000), expires_at: at(2000) };
    await api
      .post('/v1/grants/batch', {
        writes: [
          { subject: 'user:alice', relation: 'viewer', object: 'document:d1', ...window },
          { subject: 'user:bob', relation: 'member', object: 'team:t1', ...window },
          { subject: 'team:t1', relation: 'viewer', object: 'document:d2' },
          { subject: 'folder:f1', relation: 'parent', object: 'document:d3', ...window },
          { subject: 'user:carol', relation: 'viewer', object: 'folder:f1' },
        ],
      })
      .expect(200, { written: 5, deleted: 0 });
    expect(await path.services.heldTenants.load(tenant.id)).toBe(path.held);
    const checks = [
      { subject: 'user:alice', relation: 'viewer', object: 'document:d1' },
      { subject: 'user:bob', relation: 'viewer', object: 'document:d2' },
      { subject: 'user:carol', relation: 'viewer', object: 'document:d3' },
    ];
    const answersAt = async (ms: number) => {
      vi.setSystemTime(T + ms);
      const single = await Promise.all(checks.map(async (c) => (await api.post('/v1/check', c).expect(200)).body.allowed as boolean));
      const bulk = (await api.post('/v1/check/bulk', { checks }).expect(200)).body.results.map((r: { allowed: boolean }) => r.allowed);
      const listed = await Promise.all(
        ['alice', 'bob', 'carol'].map(
          async (user) => (await api.get(`/v1/objects?namespace=document&relation=viewer&subject=user:${user}`).expect(200)).body.objects as string[],
        ),
      );
      expect(bulk).toEqual(single);
      return { single, listed };
    };
    const none = { single: [false, false, false], listed: [[], [], []] };
    const all = { single: [true, true, true], listed: [['d1'], ['d2'], ['d3']] };
    expect(await answersAt(0)).toEqual(none);
    expect(await answersAt(999)).toEqual(none);
    expect(await answersAt(1000)).toEqual(all);
    expect(await answersAt(1999)).toEqual(all);
    expect(await answersAt(2000)).toEqual(none);
    // The clock alone decides, whichever way it goes.
    expect(await answersAt(1500)).toEqual(all);
  });
});

describe('writing time-bound grants', () => {
  const path = paths[0]!;
  const triple = { subject: 'user:alice', relation: 'viewer', object: 'document:d1' };

  it('returns the window in every grant body; the same times again are 200 with the original, other times replace them', async () => {
    const { api } = await tenantOn(path);
    const created = await api.post('/v1/grants', { ...triple, not_before: at(1000), expires_at: at(5000) }).expect(201);
    expect(created.body).toEqual({ ...triple, created_at: expect.any(String), not_before: at(1000), expires_at: at(5000) });
    const same = await api.post('/v1/grants', { ...triple, not_before: at(1000), expires_at: at(5000) }).expect(200);
    expect(same.body).toEqual(created.body);
    const replaced = await api.post('/v1/grants', { ...triple, expires_at: at(9000) }).expect(200);
    expect(replaced.body).toEqual({ ...created.body, not_before: null, expires_at: at(9000) });
    expect((await api.get('/v1/grants').expect(200)).body.grants).toEqual([replaced.body]);
    // Replaced at once on this node: the grant is in force now.
    expect((await api.post('/v1/check', triple).expect(200)).body).toEqual({ allowed: true });
    const unbounded = await api.post('/v1/grants', triple).expect(200);
    expect(unbounded.body).toEqual({ ...created.body, not_before: null, expires_at: null });
    expect((await api.post('/v1/grants/batch', { writes: [{ ...triple, expires_at: at(3000) }, triple] }).expect(200)).body).toEqual({
      written: 1,
      deleted: 0,
    });
    expect((await api.post('/v1/grants/batch', { writes: [triple] }).expect(200)).body).toEqual({ written: 1, deleted: 0 });
    expect((await api.post('/v1/grants/batch', { writes: [triple] }).expect(200)).body).toEqual({ written: 0, deleted: 0 });
  });

  it('lists grants not yet in force, never expired ones, and with active=true only those in force', async () => {
    const { api } = await tenantOn(path);
    await api
      .post('/v1/grants/batch', {
        writes: [
          { ...triple, object: 'document:now' },
          { ...triple, object: 'document:later', not_before: at(1000) },
          { ...triple, object: 'document:ending', expires_at: at(1000) },
        ],
      })
      .expect(200);
    const listed = async (query = '') => (await api.get(`/v1/grants${query}`).expect(200)).body.grants.map((g: { object: string }) => g.object);
    expect(await listed()).toEqual(['document:ending', 'document:later', 'document:now']);
    expect(await listed('?active=true')).toEqual(['document:ending', 'document:now']);
    vi.setSystemTime(T + 1000);
    expect(await listed()).toEqual(['document:later', 'document:now']);
    expect(await listed('?active=true')).toEqual(['document:later', 'document:now']);
    expect(await listed('?active=false')).toEqual(['document:later', 'document:now']);
    await api.get('/v1/grants?active=yes').expect(400);
  });

  it.each([
    ['an expires_at in the past', { expires_at: new Date(0).toISOString() }, 'body.expires_at', /future/],
    ['an expires_at now', { expires_at: 'NOW' }, 'body.expires_at', /future/],
    ['a window that ends before it starts', { not_before: 'T+2000', expires_at: 'T+1000' }, 'body.expires_at', /after not_before/],
    ['a window that ends as it starts', { not_before: 'T+2000', expires_at: 'T+2000' }, 'body.expires_at', /after not_before/],
    ['a time with an offset', { expires_at: '2099-01-01T00:00:00+01:00' }, 'body.expires_at', /ISO 8601 UTC/],
    ['a date without a time', { not_before: '2099-01-01' }, 'body.not_before', /ISO 8601 UTC/],
    ['a day that does not exist', { not_before: '2099-02-30T00:00:00Z' }, 'body.not_before', /ISO 8601 UTC/],
    ['year 0', { not_before: '0000-01-01T00:00:00Z' }, 'body.not_before', /ISO 8601 UTC/],
    ['words', { expires_at: 'tomorrow' }, 'body.expires_at', /ISO 8601 UTC/],
    ['a number', { expires_at: 4102444800000 }, 'body.expires_at', /string/i],
  ])('refuses %s with a 400 naming the field, and writes nothing', async (_name, times, field, message) => {
    const { api } = await tenantOn(path);
    const resolved = Object.fromEntries(
      Object.entries(times).map(([k, v]) => [k, v === 'NOW' ? at(0) : typeof v === 'string' && v.startsWith('T+') ? at(Number(v.slice(2))) : v]),
    );
    const res = await api.post('/v1/grants', { ...triple, ...resolved }).expect(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', status: 400, errors: [{ path: field, message: expect.stringMatching(message) }] });
    expect((await api.get('/v1/grants').expect(200)).body.grants).toEqual([]);
  });

  it('refuses a batch whose item has a bad time, naming the item, and applies nothing', async () => {
    const { api } = await tenantOn(path);
    await api.post('/v1/grants', { ...triple, object: 'document:kept' }).expect(201);
    const writes = [0, 1, 2].map((i) => ({ ...triple, object: `document:w${i}`, expires_at: at(1000) }));
    const res = await api
      .post('/v1/grants/batch', {
        writes: [...writes, { ...triple, expires_at: at(-1) }, { ...triple, object: 'document:w4', not_before: 'soon' }],
        deletes: [{ ...triple, object: 'document:kept' }],
      })
      .expect(400);
    expect(res.body).toMatchObject({
      type: 'invalid-request',
      detail: expect.stringContaining('writes[3].expires_at'),
      errors: [
        { path: 'writes[3].expires_at', message: 'must be in the future' },
        { path: 'writes[4].not_before', message: expect.stringMatching(/ISO 8601 UTC/) },
      ],
    });
    expect((await api.get('/v1/grants').expect(200)).body.grants.map((g: { object: string }) => g.object)).toEqual(['document:kept']);
  });
});
