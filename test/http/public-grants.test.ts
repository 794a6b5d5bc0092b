import { beforeEach, describe, expect, it } from 'vitest';
import { useTenant } from '../helpers.ts';

// `<namespace>:*` as a subject, and `*` refused as an object, on every route that takes them
// (docs/model.md#public-grants). What checks answer for them is the engine's part: here only that
// the routes take them.
const { api } = useTenant({ each: true });

beforeEach(async () => {
  await api.post('/v1/namespaces', { name: 'page', relations: { viewer: { excludes: ['blocked'] }, blocked: {} } }).expect(201);
});

const PUBLIC = { subject: 'user:*', relation: 'viewer', object: 'page:home' };

describe('a public grant', () => {
  it('is written with the subject user:*, listed by that subject, and revoked', async () => {
    const created = await api.post('/v1/grants', PUBLIC);
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject(PUBLIC);
    const listed = await api.get('/v1/grants').query({ subject: 'user:*' });
    expect(listed.status).toBe(200);
    expect(listed.body.grants).toEqual([expect.objectContaining(PUBLIC)]);
    // user:* is one subject among others to the filter: user:ann's grants do not list it.
    expect((await api.get('/v1/grants').query({ subject: 'user:ann' })).body.grants).toEqual([]);
    await api.delete('/v1/grants', PUBLIC).expect(204);
    expect((await api.get('/v1/grants').query({ subject: 'user:*' })).body.grants).toEqual([]);
  });

  it('to agent:* names no agent, so none need be registered', async () => {
    const res = await api.post('/v1/grants/batch', {
      writes: [PUBLIC, { ...PUBLIC, subject: 'agent:*' }, { ...PUBLIC, subject: 'team:*', relation: 'blocked' }],
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ written: 3, deleted: 0 });
  });

  it('is a subject that checks, explain and listings take', async () => {
    await api.post('/v1/grants', PUBLIC).expect(201);
    expect((await api.post('/v1/check', PUBLIC)).status).toBe(200);
    expect((await api.post('/v1/check/explain', PUBLIC)).status).toBe(200);
    expect((await api.post('/v1/check/bulk', { checks: [PUBLIC] })).status).toBe(200);
    expect((await api.get('/v1/objects').query({ namespace: 'page', subject: 'user:*', relation: 'viewer' })).status).toBe(200);
  });
});

describe('* as an object', () => {
  const STAR = { subject: 'user:ann', relation: 'viewer', object: 'page:*' };
  const expectRefusedAt = (res: { status: number; body: Record<string, unknown> }, path: string) => {
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      type: 'invalid-object',
      detail: expect.stringContaining(`${path}: `),
      errors: [{ path, message: expect.stringContaining("is a subject's id, never an object's") }],
    });
  };

  it('is refused in grants written and deleted, naming the item of a batch', async () => {
    expectRefusedAt(await api.post('/v1/grants', STAR), 'body.object');
    const writes = [PUBLIC, { ...PUBLIC, object: 'page:a' }, { ...PUBLIC, object: 'page:b' }, STAR];
    expectRefusedAt(await api.post('/v1/grants/batch', { writes }), 'writes[3].object');
    expectRefusedAt(await api.post('/v1/grants/batch', { deletes: [PUBLIC, STAR] }), 'deletes[1].object');
    expectRefusedAt(await api.delete('/v1/grants', STAR), 'body.object');
    expectRefusedAt(await api.delete('/v1/grants').query(STAR), 'query.object');
    expect((await api.get('/v1/grants')).body.grants).toEqual([]);
  });

  it('is refused by checks, explain, bulk checks and listings', async () => {
    expectRefusedAt(await api.post('/v1/check', STAR), 'body.object');
    expectRefusedAt(await api.post('/v1/check/explain', STAR), 'body.object');
    expectRefusedAt(await api.post('/v1/check/bulk', { checks: [PUBLIC, STAR] }), 'body.checks.1.object');
    expectRefusedAt(await api.get('/v1/subjects').query({ object: 'page:*', relation: 'viewer', subject_namespace: 'user' }), 'query.object');
    expectRefusedAt(await api.get('/v1/grants').query({ object: 'page:*' }), 'query.object');
  });
});
