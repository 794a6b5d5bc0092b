import { beforeEach, describe, expect, it, vi } from 'vitest';
import { isWriteConflict } from '../../src/store/errors.ts';
import { DOCUMENT_NAMESPACE, useTenant } from '../helpers.ts';

const { services, api } = useTenant({ each: true });

beforeEach(async () => {
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api.post('/v1/namespaces', { name: 'repo' }).expect(201);
  await api.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
});

const triple = { subject: 'user:alice', relation: 'owner', object: 'document:q3' };

describe('POST /v1/grants', () => {
  it('creates a grant with 201, then answers the same triple with 200 and the original body', async () => {
    const first = await api.post('/v1/grants', triple);
    expect(first.status).toBe(201);
    expect(first.body).toEqual({ ...triple, created_at: expect.stringMatching(/Z$/), not_before: null, expires_at: null });
    const again = await api.post('/v1/grants', triple);
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it('accepts any relation in an open namespace and grants to registered agents', async () => {
    expect((await api.post('/v1/grants', { subject: 'user:alice', relation: 'maintainer', object: 'repo:r1' })).status).toBe(201);
    expect((await api.post('/v1/grants', { subject: 'agent:bot', relation: 'viewer', object: 'document:q3' })).status).toBe(201);
  });

  it.each([
    ['User:alice', 'subject', /"User" has upper-case letters; write "user": names are a lower-case letter/],
    ['alice', 'subject', /"alice" has no colon between namespace and id/],
    ['user:al ice', 'subject', /the id holds " " \(U\+0020\): ids are 1-256 characters of A-Z a-z 0-9/],
    ['document:', 'object', /the id after the colon is empty/],
    ['9doc:q3', 'object', /"9doc" does not start with a lower-case letter/],
  ])('says what is wrong with %s as a %s, and the rule', async (value, field, explained) => {
    const res = await api.post('/v1/grants', { ...triple, [field]: value });
    expect(res.body.type).toBe(`invalid-${field}`);
    expect(res.body.errors).toEqual([{ path: `body.${field}`, message: expect.stringMatching(explained) }]);
    expect(res.body.detail).toMatch(explained);
    // Query values are parsed by the route: the same words.
    const listed = await api.get(`/v1/grants?${field}=${encodeURIComponent(value)}`);
    expect(listed.body.type).toBe(`invalid-${field}`);
    expect(listed.body.detail).toMatch(explained);
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
    await api.post('/v1/grants', { subject: 'user:alice', relation: 'maintainer', object: 'repo:r1' }).expect(201);
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
    await api.post('/v1/grants', { subject: 'user:erin', relation: 'owner', object: 'document:b1' }).expect(201);
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

  it('names the failing item of a batch in errors[].path, for the schema and for the data alike, and writes nothing', async () => {
    const good = (i: number) => ({ subject: `user:p${i}`, relation: 'owner', object: 'document:paths' });
    const refused = async (body: object, type: string, path: string) => {
      const res = await api.post('/v1/grants/batch', body);
      expect(res.body).toMatchObject({ type, errors: [{ path, message: expect.any(String) }] });
      expect(res.body.detail).toContain(`${path}: `);
    };
    await refused({ writes: [good(0), good(1), good(2), { ...good(3), object: 'nosuch:x' }] }, 'namespace-not-found', 'writes[3].object');
    await refused({ writes: [good(0), { ...good(1), relation: 'nosuch' }] }, 'unknown-relation', 'writes[1].relation');
    await refused({ writes: [good(0), good(1), { ...good(2), subject: 'agent:ghost' }] }, 'agent-not-found', 'writes[2].subject');
    await refused({ writes: [good(0), { ...good(1), object: 'agent:ghost', relation: 'owner' }] }, 'agent-not-found', 'writes[1].object');
    await refused({ writes: [good(0)], deletes: [good(5), { ...good(6), subject: 'User:p6' }] }, 'invalid-subject', 'deletes[1].subject');
    await refused({ writes: [good(0), { ...good(1), relation: 'Owner' }] }, 'invalid-request', 'writes[1].relation');
    expect((await api.get('/v1/grants?object=document:paths')).body.grants).toEqual([]);
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

  it('names the delete that repeats a write, in errors[].path and at the start of detail (docs/errors.md#problems-of-a-batch)', async () => {
    const other = { ...triple, subject: 'user:other' };
    const res = await api.post('/v1/grants/batch', { writes: [other, triple], deletes: [{ ...triple, subject: 'user:third' }, triple] });
    expect(res.status).toBe(400);
    const message = '["user:alice","owner","document:q3"] is also written, as writes[1]; send it in one list only';
    expect(res.body).toMatchObject({ type: 'invalid-request', detail: `deletes[1]: ${message}`, errors: [{ path: 'deletes[1]', message }] });
  });

  it('names a list of over 1000 triples as the list, as its items are named (`writes`, not `body.writes`)', async () => {
    const many = (n: number) => Array.from({ length: n }, (_, i) => ({ subject: `user:u${i}`, relation: 'owner', object: 'document:x' }));
    const res = await api.post('/v1/grants/batch', { writes: many(1001) });
    expect(res.body).toMatchObject({ type: 'invalid-request', detail: expect.stringMatching(/^writes: /) });
    expect(res.body.errors.map((e: { path: string }) => e.path)).toEqual(['writes']);
    // Two lists within bounds but over 1000 together: the batch as a whole.
    const both = await api.post('/v1/grants/batch', { writes: many(600), deletes: many(1100).slice(600) });
    expect(both.body.errors).toEqual([{ path: 'body', message: 'writes and deletes must hold 1 to 1000 triples in all' }]);
  });

  it('answers batches that write the same grants in opposite orders at once, none with an error', async () => {
    // The server writes in key order, so that such batches lock the grants in the same order.
    for (let round = 0; round < 8; round++) {
      const writes = Array.from({ length: 200 }, (_, i) => ({ subject: `user:race${round}_${i}`, relation: 'viewer', object: 'document:race' }));
      const [a, b] = await Promise.all([api.post('/v1/grants/batch', { writes }), api.post('/v1/grants/batch', { writes: [...writes].reverse() })]);
      expect([a.status, b.status], JSON.stringify([a.body, b.body])).toEqual([200, 200]);
      expect(a.body.written + b.body.written).toBe(200);
    }
  });

  it('answers two batches that deadlock both with 200: the one PostgreSQL aborted runs again', async () => {
    // Each deletes the grant the other writes again: no order of statements avoids the wait, only a retry.
    const [x, y] = ['user:x', 'user:y'].map((subject) => ({ subject, relation: 'viewer', object: 'document:race' })) as [
      typeof triple,
      typeof triple,
    ];
    await api.post('/v1/grants/batch', { writes: [x, y] }).expect(200);
    // Forced: the first run of each batch waits after its delete until the other's delete is done,
    // so that each holds the grant the other writes next. Runs again go straight through.
    const conflicts: unknown[] = [];
    let deletesDone = 0;
    let bothDeleted: () => void;
    const deleted = new Promise<void>((resolve) => (bothDeleted = resolve));
    const run = services.db.$transaction.bind(services.db) as (work: (tx: object) => Promise<unknown>, options: object) => Promise<unknown>;
    let runs = 0;
    const spy = vi.spyOn(services.db, '$transaction').mockImplementation(((work: (tx: object) => Promise<unknown>, options: object) => {
      const firstRun = ++runs <= 2;
      return run((tx) => work(firstRun ? pausingAfterDelete(tx) : tx), options).catch((error: unknown) => {
        if (isWriteConflict(error)) conflicts.push(error);
        throw error;
      });
    }) as never);
    const pausingAfterDelete = (tx: object) =>
      new Proxy(tx, {
        get: (target, name) => {
          const value: unknown = Reflect.get(target, name);
          if (name !== '$executeRaw' || typeof value !== 'function') return value;
          return async (strings: TemplateStringsArray, ...values: unknown[]) => {
            const result: unknown = await value.call(target, strings, ...values);
            if (strings[0]!.includes('DELETE')) {
              if (++deletesDone === 2) bothDeleted();
              await deleted;
            }
            return result;
          };
        },
      });
    try {
      const [c, d] = await Promise.all([
        api.post('/v1/grants/batch', { deletes: [x], writes: [y] }),
        api.post('/v1/grants/batch', { deletes: [y], writes: [x] }),
      ]);
      expect([c.status, d.status], JSON.stringify([c.body, d.body])).toEqual([200, 200]);
    } finally {
      spy.mockRestore();
    }
    expect(conflicts.map((error) => (error as Error).message)).toEqual([expect.stringMatching(/deadlock|40P01/i)]);
    expect(runs).toBe(3);
    // As if one ran after the other: exactly one of the two grants is left.
    const left = await api.post('/v1/check/bulk', { checks: [x, y] });
    expect(left.body.results.filter((r: { allowed: boolean }) => r.allowed)).toHaveLength(1);
  });

  it('accepts 1000 triples', async () => {
    const writes = Array.from({ length: 1000 }, (_, i) => ({ subject: `user:k${i}`, relation: 'viewer', object: 'document:big' }));
    const res = await api.post('/v1/grants/batch', { writes });
    expect(res.body).toEqual({ written: 1000, deleted: 0 });
  });
});

describe('GET /v1/grants', () => {
  it('filters by subject, relation, object and namespace', async () => {
    const writes = [
      ...['b3', 'b1', 'b2'].map((id) => ({ subject: 'user:erin', relation: 'owner', object: `document:${id}` })),
      { subject: 'agent:bot', relation: 'viewer', object: 'document:q3' },
      { subject: 'user:frank', relation: 'viewer', object: 'document:q3' },
      { subject: 'user:alice', relation: 'maintainer', object: 'repo:r1' },
    ];
    await api.post('/v1/grants/batch', { writes: [...writes, triple] }).expect(200);
    const bySubject = await api.get('/v1/grants?subject=user:erin');
    expect(bySubject.status).toBe(200);
    expect(bySubject.body.grants.map((g: { object: string }) => g.object)).toEqual(['document:b1', 'document:b2', 'document:b3']);
    expect(bySubject.body.next_cursor).toBeNull();
    const byObject = await api.get('/v1/grants?object=document:q3&relation=viewer');
    expect(byObject.body.grants).toEqual([
      { subject: 'agent:bot', relation: 'viewer', object: 'document:q3', created_at: expect.any(String), not_before: null, expires_at: null },
      { subject: 'user:frank', relation: 'viewer', object: 'document:q3', created_at: expect.any(String), not_before: null, expires_at: null },
    ]);
    const byNamespace = await api.get('/v1/grants?namespace=repo');
    expect(byNamespace.body.grants).toEqual([
      { subject: 'user:alice', relation: 'maintainer', object: 'repo:r1', created_at: expect.any(String), not_before: null, expires_at: null },
    ]);
  });

  /** 1000 viewers of document:big, written in no particular order. */
  const manyViewers = () => {
    const writes = Array.from({ length: 1000 }, (_, i) => ({ subject: `user:k${(i * 7919) % 1000}`, relation: 'viewer', object: 'document:big' }));
    return api.post('/v1/grants/batch', { writes }).expect(200);
  };

  it('pages in a stable order', async () => {
    await manyViewers();
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
    await manyViewers();
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
