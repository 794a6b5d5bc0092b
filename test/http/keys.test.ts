import { describe, expect, it } from 'vitest';
import { client, useTenant } from '../helpers.ts';

const { app, tenant, api } = useTenant();

describe('POST /v1/keys', () => {
  it('creates a key and shows its secret once', async () => {
    const res = await api.post('/v1/keys', { label: 'ci', scopes: ['check:read', 'grant:read'] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.stringMatching(/^key_[A-Za-z0-9]+$/),
      prefix: expect.stringMatching(/^svc_live_[A-Za-z0-9]{8}$/),
      secret: expect.stringMatching(/^svc_live_[A-Za-z0-9]{40,}$/),
      label: 'ci',
      scopes: ['check:read', 'grant:read'],
      created_at: expect.stringMatching(/Z$/),
    });
    expect(res.body.secret.startsWith(res.body.prefix)).toBe(true);
    const list = await api.get('/v1/keys');
    expect(JSON.stringify(list.body)).not.toContain(res.body.secret);
    expect((await client(app, res.body.secret).get('/v1/namespaces')).status).toBe(200);
  });

  it('defaults to check:read', async () => {
    const res = await api.post('/v1/keys', { label: 'default' });
    expect(res.body.scopes).toEqual(['check:read']);
  });

  it.each([
    ['an empty scope list', { label: 'x', scopes: [] }],
    ['an unknown scope', { label: 'x', scopes: ['root'] }],
    ['a non-string label', { label: 5 }],
    ['a label with U+0000', { label: 'a\u0000b' }],
    ['a label with an unpaired surrogate', { label: 'a\ud800b' }],
  ])('answers 400 invalid-request for %s', async (_, body) => {
    const res = await api.post('/v1/keys', body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe('invalid-request');
  });
});

describe('GET /v1/keys', () => {
  it('lists live keys with prefix, label, scopes and timestamps, never the secret', async () => {
    const res = await api.get('/v1/keys');
    expect(res.status).toBe(200);
    for (const key of res.body.keys) {
      expect(Object.keys(key).sort()).toEqual(['created_at', 'id', 'label', 'last_used_at', 'prefix', 'scopes']);
    }
    const admin = res.body.keys.find((k: { prefix: string }) => tenant.adminKey.startsWith(k.prefix));
    expect(admin).toMatchObject({ label: 'admin', scopes: ['admin'] });
  });

  it('shows last_used_at null until the key is used, then the time of that use', async () => {
    const created = (await api.post('/v1/keys', { label: 'used', scopes: ['grant:read'] })).body as { id: string; secret: string };
    const lastUsed = async (): Promise<string | null> =>
      (await api.get('/v1/keys')).body.keys.find((k: { id: string }) => k.id === created.id).last_used_at;
    expect(await lastUsed()).toBeNull();
    const before = Date.now();
    expect((await client(app, created.secret).get('/v1/namespaces')).status).toBe(200);
    const after = Date.now();
    // Written off the request path.
    await expect.poll(lastUsed).not.toBeNull();
    const usedAt = Date.parse((await lastUsed())!);
    expect(usedAt).toBeGreaterThanOrEqual(before);
    expect(usedAt).toBeLessThanOrEqual(after);
  });
});

describe('DELETE /v1/keys/{id}', () => {
  it('revokes with 204, leaves it out of the list, and 404 key-not-found the second time', async () => {
    const created = await api.post('/v1/keys', { label: 'temp' });
    expect((await api.delete(`/v1/keys/${created.body.id}`)).status).toBe(204);
    const list = await api.get('/v1/keys');
    expect(list.body.keys.map((k: { id: string }) => k.id)).not.toContain(created.body.id);
    const again = await api.delete(`/v1/keys/${created.body.id}`);
    expect(again.status).toBe(404);
    expect(again.body.type).toBe('key-not-found');
    expect((await api.delete('/v1/keys/key_unknown')).body.type).toBe('key-not-found');
  });

  it('answers 404 key-not-found for an id no key can have, U+0000 included', async () => {
    for (const id of ['key_a%00b', 'not-a-key', '%F0%9F%98%80']) {
      const res = await api.delete(`/v1/keys/${id}`);
      expect(res.status, id).toBe(404);
      expect(res.body.type).toBe('key-not-found');
    }
  });

  it('answers a path that is not valid percent-encoding with 400 invalid-request saying so', async () => {
    const res = await api.delete('/v1/keys/%E0%A4%A');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', detail: 'the path is not valid percent-encoding' });
  });
});
