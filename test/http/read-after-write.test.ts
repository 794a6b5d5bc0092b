import { beforeEach, describe, expect, it } from 'vitest';
import { client, newTenant, useApp } from '../helpers.ts';

/** Answers are cached per node: every write route must make the next read on this node see it. */
const { services, app } = useApp();
let api: ReturnType<typeof client>;
const check = async (subject: string, relation: string, object: string) =>
  (await api.post('/v1/check', { subject, relation, object })).body.allowed as boolean;

beforeEach(async () => {
  api = client(app, (await newTenant(services)).adminKey);
  await api.post('/v1/namespaces', { name: 'doc', relations: { parent: {}, viewer: { includes: ['parent->viewer'] } } }).expect(201);
});

describe('read after write on one node', () => {
  it('POST and DELETE /v1/grants', async () => {
    expect(await check('user:a', 'viewer', 'doc:1')).toBe(false);
    await api.post('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(201);
    expect(await check('user:a', 'viewer', 'doc:1')).toBe(true);
    await api.delete('/v1/grants', { subject: 'user:a', relation: 'viewer', object: 'doc:1' }).expect(204);
    expect(await check('user:a', 'viewer', 'doc:1')).toBe(false);
  });

  it('POST /v1/grants/batch', async () => {
    expect(await check('user:a', 'viewer', 'doc:2')).toBe(false);
    await api.post('/v1/grants/batch', { writes: [{ subject: 'user:a', relation: 'viewer', object: 'doc:2' }] }).expect(200);
    expect(await check('user:a', 'viewer', 'doc:2')).toBe(true);
    await api.post('/v1/grants/batch', { deletes: [{ subject: 'user:a', relation: 'viewer', object: 'doc:2' }] }).expect(200);
    expect(await check('user:a', 'viewer', 'doc:2')).toBe(false);
  });

  it('POST and DELETE /v1/agents', async () => {
    await api.post('/v1/grants', { subject: 'user:alice', relation: 'viewer', object: 'doc:3' }).expect(201);
    expect(await check('agent:bot', 'viewer', 'doc:3')).toBe(false);
    await api.post('/v1/agents', { external_id: 'bot', scope: ['*:*'] }).expect(201);
    await api.post('/v1/grants', { subject: 'agent:bot', relation: 'member', object: 'user:alice' }).expect(201);
    expect(await check('agent:bot', 'viewer', 'doc:3')).toBe(true);
    await api.delete('/v1/agents/bot').expect(200);
    expect(await check('agent:bot', 'viewer', 'doc:3')).toBe(false);
  });
});
