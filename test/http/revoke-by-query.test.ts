import { beforeEach, describe, expect, it } from 'vitest';
import { client, newTenant, useApp } from '../helpers.ts';

/** DELETE /v1/grants with the triple as query parameters, for proxies and tools that drop a DELETE's body. */
const { services, app } = useApp();
let api: ReturnType<typeof client>;
const triple = { subject: 'user:alice', relation: 'owner', object: 'document:q3' };
const query = (t: Record<string, string>) => `/v1/grants?${new URLSearchParams(t).toString()}`;
const held = async () => (await api.post('/v1/check', triple)).body.allowed as boolean;

beforeEach(async () => {
  api = client(app, (await newTenant(services)).adminKey);
  await api.post('/v1/namespaces', { name: 'document', relations: { owner: {} } }).expect(201);
  await api.post('/v1/grants', triple).expect(201);
});

describe('DELETE /v1/grants?subject=&relation=&object=', () => {
  it('revokes the grant: 204, and again 204 once it is gone', async () => {
    expect((await api.delete(query(triple))).status).toBe(204);
    expect(await held()).toBe(false);
    expect((await api.delete(query(triple))).status).toBe(204);
  });

  it('takes ids that need percent-encoding', async () => {
    const odd = { ...triple, subject: 'user:a+b@x.io', object: 'document:q|3~=' };
    await api.post('/v1/grants', odd).expect(201);
    await api.delete(query(odd)).expect(204);
    expect((await api.post('/v1/check', odd)).body.allowed).toBe(false);
    expect(await held()).toBe(true);
  });

  it('answers 400 for a missing parameter, naming it, and revokes nothing', async () => {
    const res = await api.delete(query({ subject: triple.subject, object: triple.object }));
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ type: 'invalid-request', errors: [{ path: 'query.relation', message: expect.any(String) }] });
    expect((await api.delete('/v1/grants')).body.type).toBe('invalid-request');
    expect(await held()).toBe(true);
  });

  it('answers invalid-subject and invalid-object for malformed ones, invalid-request for an unknown parameter', async () => {
    expect((await api.delete(query({ ...triple, subject: 'alice' }))).body.type).toBe('invalid-subject');
    expect((await api.delete(query({ ...triple, object: 'q3' }))).body.type).toBe('invalid-object');
    expect((await api.delete(query({ ...triple, namespace: 'document' }))).body.type).toBe('invalid-request');
    expect(await held()).toBe(true);
  });

  it('answers 400 when the triple is given both ways, and the body form still works', async () => {
    const both = await api.delete(query(triple), triple);
    expect(both.status).toBe(400);
    expect(both.body).toMatchObject({
      type: 'invalid-request',
      detail: 'give the triple either as the JSON body or as the query parameters, not both',
    });
    expect(await held()).toBe(true);
    await api.delete('/v1/grants', triple).expect(204);
    expect(await held()).toBe(false);
  });
});
