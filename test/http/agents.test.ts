import { beforeEach, describe, expect, it } from 'vitest';
import { DOCUMENT_NAMESPACE, useTenant } from '../helpers.ts';

const { api } = useTenant({ each: true });
const SUMMARIZER = { external_id: 'summarizer', display_name: 'Summarizer', owner: 'user:alice', scope: ['document:viewer'] };

beforeEach(async () => {
  await api.post('/v1/namespaces', DOCUMENT_NAMESPACE).expect(201);
});

describe('POST /v1/agents', () => {
  it('registers an agent and creates no grants', async () => {
    const res = await api.post('/v1/agents', SUMMARIZER);
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      external_id: 'summarizer',
      subject: 'agent:summarizer',
      display_name: 'Summarizer',
      owner: 'user:alice',
      scope: ['document:viewer'],
      created_at: expect.stringMatching(/Z$/),
    });
    expect((await api.get('/v1/grants?subject=agent:summarizer')).body.grants).toEqual([]);
  });

  it('leaves optional fields null', async () => {
    const res = await api.post('/v1/agents', { external_id: 'minimal', scope: [] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ display_name: null, owner: null, scope: [] });
  });

  it('answers 409 agent-exists for a taken id', async () => {
    await api.post('/v1/agents', SUMMARIZER).expect(201);
    const res = await api.post('/v1/agents', { external_id: 'summarizer', scope: [] });
    expect(res.status).toBe(409);
    expect(res.body.type).toBe('agent-exists');
  });

  it.each([
    ['invalid-subject', { external_id: 'x1', owner: 'group:eng', scope: [] }],
    ['invalid-subject', { external_id: 'x1', owner: 'alice', scope: [] }],
    ['invalid-request', { external_id: 'x1' }],
    ['invalid-request', { external_id: 'bad id', scope: [] }],
    ['invalid-request', { external_id: '..', scope: [] }],
    ['invalid-request', { scope: [] }],
    ['invalid-request', { external_id: 'x1', display_name: 'a\u0000b', scope: [] }],
    ['invalid-request', { external_id: 'x1', display_name: '\udc00', scope: [] }],
    ['invalid-request', { external_id: 'x1', scope: ['document:\u0000'] }],
  ])('answers 400 %s', async (type, body) => {
    const res = await api.post('/v1/agents', body);
    expect(res.status).toBe(400);
    expect(res.body.type).toBe(type);
  });
});

describe('GET /v1/agents', () => {
  it('gets one agent, and 404 agent-not-found for an unknown one', async () => {
    await api.post('/v1/agents', SUMMARIZER).expect(201);
    expect((await api.get('/v1/agents/summarizer')).body.owner).toBe('user:alice');
    const res = await api.get('/v1/agents/ghost');
    expect(res.status).toBe(404);
    expect(res.body.type).toBe('agent-not-found');
  });

  it('lists agents by id, page by page', async () => {
    for (const id of ['summarizer', 'a3', 'minimal', 'a1', 'a2']) await api.post('/v1/agents', { external_id: id, scope: [] }).expect(201);
    const first = await api.get('/v1/agents?limit=2');
    expect(first.body.agents.map((a: { external_id: string }) => a.external_id)).toEqual(['a1', 'a2']);
    const second = await api.get(`/v1/agents?limit=2&cursor=${encodeURIComponent(first.body.next_cursor)}`);
    expect(second.body.agents.map((a: { external_id: string }) => a.external_id)).toEqual(['a3', 'minimal']);
    const rest = await api.get(`/v1/agents?limit=2&cursor=${encodeURIComponent(second.body.next_cursor)}`);
    expect(rest.body).toEqual({ agents: [expect.objectContaining({ external_id: 'summarizer' })], next_cursor: null });
    expect((await api.get('/v1/agents?cursor=nope')).body.type).toBe('invalid-cursor');
    expect((await api.get('/v1/agents?cursor=')).body.type).toBe('invalid-cursor');
  });
});

describe('DELETE /v1/agents/{external_id}', () => {
  it('kills the agent and every grant naming it, reporting how many', async () => {
    await api.post('/v1/agents', { external_id: 'doomed', scope: ['*:*'] }).expect(201);
    await api
      .post('/v1/grants/batch', {
        writes: [
          { subject: 'agent:doomed', relation: 'viewer', object: 'document:d1' },
          { subject: 'agent:doomed', relation: 'owner', object: 'document:d2' },
          { subject: 'agent:doomed', relation: 'member', object: 'user:alice' },
          { subject: 'user:alice', relation: 'owner', object: 'agent:doomed' },
          { subject: 'user:alice', relation: 'owner', object: 'document:d1' },
        ],
      })
      .expect(200);
    expect((await api.post('/v1/check', { subject: 'agent:doomed', relation: 'viewer', object: 'document:d1' })).body.allowed).toBe(true);
    const res = await api.delete('/v1/agents/doomed');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ external_id: 'doomed', grants_removed: 4, clients_removed: 0 });
    expect((await api.post('/v1/check', { subject: 'agent:doomed', relation: 'viewer', object: 'document:d1' })).body.allowed).toBe(false);
    expect((await api.get('/v1/grants?subject=user:alice')).body.grants).toHaveLength(1);
    expect((await api.get('/v1/agents/doomed')).status).toBe(404);
    const again = await api.delete('/v1/agents/doomed');
    expect(again.status).toBe(404);
    expect(again.body.type).toBe('agent-not-found');
    expect((await api.post('/v1/grants', { subject: 'agent:doomed', relation: 'viewer', object: 'document:d1' })).body.type).toBe('agent-not-found');
  });
});
