import { beforeAll, describe, expect, it } from 'vitest';
import { client, DOCUMENT_NAMESPACE, newTenant, useTenant } from '../helpers.ts';

const { services, app, tenant, api } = useTenant();
let other: ReturnType<typeof client>;
let reader: ReturnType<typeof client>;
let writer: ReturnType<typeof client>;
const viewers = Array.from({ length: 25 }, (_, i) => `user:v${String(i).padStart(2, '0')}`);

beforeAll(async () => {
  reader = client(app, await tenant.keyWith('check:read'));
  writer = client(app, await tenant.keyWith('grant:write'));
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/namespaces', { name: 'group', relations: { member: {} } }).expect(201);
  await api.post('/v1/agents', { external_id: 'bot', scope: ['document:viewer'] }).expect(201);
  await api.post('/v1/agents', { external_id: 'narrow', scope: ['document:owner'] }).expect(201);
  await api
    .post('/v1/grants/batch', {
      writes: [
        ...viewers.map((subject) => ({ subject, relation: 'viewer', object: 'document:d1' })),
        { subject: 'user:Zoe', relation: 'owner', object: 'document:d1' },
        { subject: 'group:eng', relation: 'editor', object: 'document:d1' },
        { subject: 'user:amy', relation: 'member', object: 'group:eng' },
        { subject: 'agent:bot', relation: 'member', object: 'user:Zoe' },
        { subject: 'agent:narrow', relation: 'viewer', object: 'document:d1' },
        { subject: 'user:bob', relation: 'viewer', object: 'document:other' },
      ],
    })
    .expect(200);
  // Another tenant with the same names, and a grant on its own document:d1.
  const second = await newTenant(services);
  other = client(app, second.adminKey);
  await other.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await other.post('/v1/grants', { subject: 'user:mallory', relation: 'viewer', object: 'document:d1' }).expect(201);
});

const list = (query: Record<string, string | number>, as = api) =>
  as.get(`/v1/subjects?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`);
const d1Viewers = { object: 'document:d1', relation: 'viewer', subject_namespace: 'user' };

describe('GET /v1/subjects', () => {
  it('lists every subject of the namespace a check allows, directly, through includes and through a group, in byte order', async () => {
    const res = await list(d1Viewers);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ object: 'document:d1', relation: 'viewer', subjects: ['user:Zoe', 'user:amy', ...viewers], next_cursor: null });
    expect((await list({ ...d1Viewers, relation: 'owner' })).body.subjects).toEqual(['user:Zoe']);
    expect((await list({ ...d1Viewers, subject_namespace: 'group' })).body.subjects).toEqual(['group:eng']);
    expect((await list({ ...d1Viewers, object: 'document:nothing' })).body).toEqual({
      object: 'document:nothing',
      relation: 'viewer',
      subjects: [],
      next_cursor: null,
    });
  });

  it('lists only registered agents whose scope covers the relation', async () => {
    expect((await list({ ...d1Viewers, subject_namespace: 'agent' })).body.subjects).toEqual(['agent:bot']);
  });

  it('pages with next_cursor until null, the page size free to change', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list({ ...d1Viewers, limit: pages % 2 === 0 ? 10 : 3, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.subjects);
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(['user:Zoe', 'user:amy', ...viewers]);
    expect(pages).toBe(5);
  });

  it('refuses a cursor replayed with another object, relation or subject namespace, tampered with, or from another tenant', async () => {
    const cursor: string = (await list({ ...d1Viewers, limit: 5 })).body.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    for (const [query, as] of [
      [{ ...d1Viewers, object: 'document:other', cursor }, api],
      [{ ...d1Viewers, relation: 'owner', cursor }, api],
      [{ ...d1Viewers, subject_namespace: 'group', cursor }, api],
      [{ ...d1Viewers, cursor: `${cursor.slice(0, -2)}${cursor.at(-2) === 'A' ? 'B' : 'A'}${cursor.at(-1)}` }, api],
      [{ ...d1Viewers, cursor: '' }, api],
      [{ ...d1Viewers, cursor }, other],
    ] as const) {
      const res = await list(query, as);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.body.type).toBe('invalid-cursor');
    }
  });

  it('answers bad input with the problem that names it', async () => {
    // Each with the paths its errors[] name (none: the problem has no errors member).
    const cases: [Record<string, string | number>, number, string, string[]][] = [
      [{ ...d1Viewers, object: 'd1' }, 400, 'invalid-object', ['query.object']],
      [{ ...d1Viewers, relation: 'reader' }, 400, 'unknown-relation', []],
      [{ ...d1Viewers, object: 'folder:f1' }, 404, 'namespace-not-found', []],
      [{ ...d1Viewers, subject_namespace: 'robot' }, 400, 'invalid-request', ['query.subject_namespace']],
      [{ ...d1Viewers, subject_namespace: 'Users' }, 400, 'invalid-request', ['query.subject_namespace']],
      [{ object: 'document:d1', relation: 'viewer' }, 400, 'invalid-request', ['query.subject_namespace']],
      [{ ...d1Viewers, limit: 0 }, 400, 'invalid-request', ['query.limit']],
      [{ ...d1Viewers, limit: 1001 }, 400, 'invalid-request', ['query.limit']],
      [{ ...d1Viewers, limit: '1e2' }, 400, 'invalid-request', ['query.limit']],
      [{ ...d1Viewers, extra: 'x' }, 400, 'invalid-request', ['query']],
    ];
    for (const [query, status, type, paths] of cases) {
      const res = await list(query);
      expect(res.status, JSON.stringify(query)).toBe(status);
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body).toMatchObject({ type, status, title: expect.any(String), detail: expect.any(String) });
      expect(res.body.errors?.map((e: { path: string }) => e.path) ?? []).toEqual(paths);
    }
  });

  it("never shows another tenant's subjects", async () => {
    expect((await list(d1Viewers, other)).body.subjects).toEqual(['user:mallory']);
    expect((await list(d1Viewers)).body.subjects).not.toContain('user:mallory');
  });

  it('takes check:read, not grant:write', async () => {
    expect((await list(d1Viewers, reader)).status).toBe(200);
    expect((await list(d1Viewers, writer)).body).toMatchObject({ status: 403, type: 'insufficient-scope' });
  });
});

describe('POST /v1/check/explain', () => {
  const explain = (body: object, as = api) => as.post('/v1/check/explain', body);

  it('gives a shortest path of grants when allowed, with reason null', async () => {
    const res = await explain({ subject: 'user:amy', relation: 'viewer', object: 'document:d1' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      allowed: true,
      reason: null,
      path: [
        { subject: 'user:amy', relation: 'member', object: 'group:eng', via: 'member' },
        { subject: 'group:eng', relation: 'editor', object: 'document:d1', via: 'includes:editor' },
      ],
    });
    expect((await explain({ subject: 'user:v03', relation: 'viewer', object: 'document:d1' })).body.path).toEqual([
      { subject: 'user:v03', relation: 'viewer', object: 'document:d1', via: 'direct' },
    ]);
  });

  it('says why a check is denied, with an empty path', async () => {
    for (const [subject, relation, reason] of [
      ['user:bob', 'viewer', 'no-path'],
      ['user:v03', 'owner', 'no-path'],
      ['agent:ghost', 'viewer', 'agent-not-registered'],
      ['agent:narrow', 'viewer', 'agent-scope'],
    ]) {
      const res = await explain({ subject, relation, object: 'document:d1' });
      expect(res.body, `${subject} ${relation}`).toEqual({ allowed: false, path: [], reason });
      // The same answer as the check itself.
      expect((await api.post('/v1/check', { subject, relation, object: 'document:d1' })).body).toEqual({ allowed: false });
    }
  });

  it('answers bad input as POST /v1/check does', async () => {
    const d1 = { subject: 'user:amy', relation: 'viewer', object: 'document:d1' };
    for (const [body, status, type] of [
      [{ ...d1, subject: 'amy' }, 400, 'invalid-subject'],
      [{ ...d1, object: 'd1' }, 400, 'invalid-object'],
      [{ ...d1, relation: 'reader' }, 400, 'unknown-relation'],
      [{ ...d1, object: 'folder:f1' }, 404, 'namespace-not-found'],
      [{ subject: 'user:amy', relation: 'viewer' }, 400, 'invalid-request'],
      [{ ...d1, extra: true }, 400, 'invalid-request'],
    ] as const) {
      const res = await explain(body);
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.type).toBe(type);
    }
    const notJson = await api.post('/v1/check/explain').set('Content-Type', 'text/plain').send('hello');
    expect(notJson.status).toBe(415);
  });

  it("never explains with another tenant's grants, and takes check:read", async () => {
    expect((await explain({ subject: 'user:amy', relation: 'viewer', object: 'document:d1' }, other)).body).toEqual({
      allowed: false,
      path: [],
      reason: 'no-path',
    });
    expect((await explain({ subject: 'user:v03', relation: 'viewer', object: 'document:d1' }, reader)).status).toBe(200);
    expect((await explain({ subject: 'user:v03', relation: 'viewer', object: 'document:d1' }, writer)).body.type).toBe('insufficient-scope');
  });
});
