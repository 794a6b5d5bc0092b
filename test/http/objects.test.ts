import { beforeAll, describe, expect, it } from 'vitest';
import { DOCUMENT_NAMESPACE, useTenant } from '../helpers.ts';

const { api } = useTenant();
const ids = Array.from({ length: 25 }, (_, i) => `doc-${String(i).padStart(2, '0')}`);

beforeAll(async () => {
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
  await api
    .post('/v1/grants/batch', {
      writes: [
        ...ids.map((id) => ({ subject: 'user:alice', relation: 'owner', object: `document:${id}` })),
        { subject: 'user:bob', relation: 'viewer', object: 'document:other' },
      ],
    })
    .expect(200);
});

const list = (query: Record<string, string | number>) =>
  api.get(`/v1/objects?${new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]))}`);

describe('GET /v1/objects', () => {
  it('lists the reachable ids ascending, 100 per page by default', async () => {
    const res = await list({ namespace: 'document', subject: 'user:alice', relation: 'viewer' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ namespace: 'document', objects: ids, next_cursor: null });
  });

  it('pages with next_cursor until null', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res = await list({ namespace: 'document', subject: 'user:alice', relation: 'editor', limit: 10, ...(cursor ? { cursor } : {}) });
      expect(res.status).toBe(200);
      seen.push(...res.body.objects);
      cursor = res.body.next_cursor;
      pages++;
    } while (cursor);
    expect(seen).toEqual(ids);
    expect(pages).toBe(3);
  });

  it('answers an empty page for a subject that reaches nothing', async () => {
    const res = await list({ namespace: 'document', subject: 'user:nobody', relation: 'viewer' });
    expect(res.body).toEqual({ namespace: 'document', objects: [], next_cursor: null });
  });

  // One character of the signature changed (the second-to-last: each of its six bits is data, while the
  // last character of a 16-byte signature carries only two). Overwriting it with a fixed string would
  // leave the cursor as it was whenever it already ended so.
  const tamperedSignature = (cursor: string) => {
    const at = cursor.length - 2;
    return `${cursor.slice(0, at)}${cursor[at] === 'A' ? 'B' : 'A'}${cursor.slice(at + 1)}`;
  };

  it('refuses a cursor replayed with another subject, relation or namespace, tampered with, or padded', async () => {
    const first = await list({ namespace: 'document', subject: 'user:alice', relation: 'viewer', limit: 5 });
    const cursor: string = first.body.next_cursor;
    expect(cursor).toEqual(expect.any(String));
    const variants = [
      { namespace: 'document', subject: 'user:bob', relation: 'viewer', cursor },
      { namespace: 'document', subject: 'user:alice', relation: 'owner', cursor },
      { namespace: 'user', subject: 'user:alice', relation: 'viewer', cursor },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: tamperedSignature(cursor) },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: `eyJ6eiJ9${cursor.slice(cursor.indexOf('.'))}` },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: 'garbage' },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: '' },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: `${cursor}${'A'.repeat(3000)}` },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: `${cursor}==` },
      { namespace: 'document', subject: 'user:alice', relation: 'viewer', cursor: `${cursor}  ` },
    ];
    for (const query of variants) {
      const res = await list(query);
      expect(res.status, JSON.stringify(query)).toBe(400);
      expect(res.body.type).toBe('invalid-cursor');
    }
  });

  it.each([
    ['limit 0', { limit: 0 }],
    ['limit 1001', { limit: 1001 }],
    ['limit 1.5', { limit: '1.5' }],
    ['limit abc', { limit: 'abc' }],
    ['limit 0x10', { limit: '0x10' }],
    ['limit 1e2', { limit: '1e2' }],
    ['limit +5', { limit: '+5' }],
    ['limit 5.0', { limit: '5.0' }],
    ['limit " 5"', { limit: ' 5' }],
    ['an empty limit', { limit: '' }],
  ])('answers 400 invalid-request for %s', async (_, extra) => {
    const res = await list({ namespace: 'document', subject: 'user:alice', relation: 'viewer', ...extra });
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-request');
  });

  it('accepts limit 1000', async () => {
    const res = await list({ namespace: 'document', subject: 'user:alice', relation: 'viewer', limit: 1000 });
    expect(res.status).toBe(200);
  });

  it.each([
    ['a missing namespace', { subject: 'user:alice', relation: 'viewer' }, 400, 'invalid-request'],
    ['a malformed subject', { namespace: 'document', subject: 'alice', relation: 'viewer' }, 400, 'invalid-subject'],
    ['an undeclared relation', { namespace: 'document', subject: 'user:alice', relation: 'member' }, 400, 'unknown-relation'],
    ['an unknown namespace', { namespace: 'nothing', subject: 'user:alice', relation: 'viewer' }, 404, 'namespace-not-found'],
  ])('answers %s with %i %s', async (_, query, status, type) => {
    const res = await list(query);
    expect(res.status).toBe(status);
    expect(res.body.type).toBe(type);
  });
});
