import * as oauth from 'openid-client';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { client, newTenant, useServices, type TestTenant } from '../helpers.ts';
import { api, basic, discover, form, useOAuthServer } from './support.ts';

// The killswitch's reach (docs/oauth.md#the-killswitch): the keys and OAuth clients made on an
// agent's authority, however far down a chain of them, end with the agent.

const server = useOAuthServer();
// Another node over the same database: the keys it holds as verified are its own (for up to 1 s).
const otherNode = createApp(useServices());
let tenant: TestTenant;

beforeAll(async () => {
  tenant = await newTenant(server.services);
});

afterEach(() => {
  vi.useRealTimers();
});

const call = (token: string, method: string, path: string, body?: unknown) => api(server.issuer, token, method, path, body);

async function clientToken(clientId: string, secret: string): Promise<string> {
  return (await oauth.clientCredentialsGrant(await discover(server.issuer, clientId, secret))).access_token;
}

async function newKey(token: string, label: string): Promise<{ id: string; secret: string }> {
  const res = await call(token, 'POST', '/v1/keys', { label, scopes: ['admin'] });
  expect(res.status).toBe(201);
  return res.body as { id: string; secret: string };
}

async function newClient(token: string, body: Record<string, unknown>): Promise<{ client_id: string; client_secret: string }> {
  const res = await call(token, 'POST', '/v1/oauth/clients', { type: 'confidential', scopes: ['admin'], ...body });
  expect(res.status).toBe(201);
  return res.body as { client_id: string; client_secret: string };
}

interface FeedChange {
  revision: string;
  kind: string;
  op: string;
  id?: string;
  client_id?: string;
  external_id?: string;
}

describe('the killswitch', () => {
  it('ends the keys and clients made on the agent’s authority, down every chain, and nothing else', async () => {
    const admin = tenant.adminKey;
    expect((await call(admin, 'POST', '/v1/agents', { external_id: 'bot9', scope: ['document:viewer'] })).status).toBe(201);
    const own = await newClient(admin, { name: 'bot9c', agent: 'bot9' });
    const agentToken = await clientToken(own.client_id, own.client_secret);

    // agent -> key K1 -> key K2; agent -> client C2 -> key K3; agent -> key K1 -> client C3 -> key K4.
    const k1 = await newKey(agentToken, 'agent-made');
    const k2 = await newKey(k1.secret, 'made by K1');
    const c2 = await newClient(agentToken, { name: 'C2' });
    const c2Token = await clientToken(c2.client_id, c2.client_secret);
    const k3 = await newKey(c2Token, 'made by C2');
    const c3 = await newClient(k1.secret, { name: 'C3' });
    const k4 = await newKey(await clientToken(c3.client_id, c3.client_secret), 'made by C3');
    // Made by the administrator: not the agent's.
    const bystander = await newKey(admin, 'admin-made');
    const bystanderClient = await newClient(admin, { name: 'admin-made' });

    const before = (await call(admin, 'POST', '/v1/agents', { external_id: 'marker', scope: [] })).headers.get('grantd-revision')!;
    const killed = await call(admin, 'DELETE', '/v1/agents/bot9');
    expect(killed).toMatchObject({ status: 200, body: { external_id: 'bot9', grants_removed: 0, clients_removed: 3 } });
    expect(Object.keys(killed.body!).sort()).toEqual(['clients_removed', 'external_id', 'grants_removed']);

    for (const secret of [k1.secret, k2.secret, k3.secret, k4.secret, agentToken, c2Token]) {
      expect((await call(secret, 'GET', '/v1/keys')).status).toBe(401);
    }
    for (const { client_id, client_secret } of [c2, c3]) {
      const refused = await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, basic(client_id, client_secret));
      expect(refused).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    }
    expect((await call(bystander.secret, 'GET', '/v1/keys')).status).toBe(200);
    const keys = ((await call(admin, 'GET', '/v1/keys')).body as { keys: { id: string }[] }).keys.map((k) => k.id);
    expect(keys).toContain(bystander.id);
    for (const { id } of [k1, k2, k3, k4]) expect(keys).not.toContain(id);
    const clients = ((await call(admin, 'GET', '/v1/oauth/clients')).body as { clients: { client_id: string }[] }).clients.map((c) => c.client_id);
    expect(clients).toEqual([bystanderClient.client_id]);

    // The feed shows what the kill ended: the clients deleted, the keys revoked (a revocation is a key's delete).
    let changes: FeedChange[] = [];
    await expect
      .poll(
        async () => {
          const feed = await call(admin, 'GET', `/v1/changes?after=${encodeURIComponent(before)}&limit=100`);
          changes = (feed.body as { changes: FeedChange[] }).changes;
          return changes.length;
        },
        { timeout: 10_000, interval: 50 },
      )
      .toBeGreaterThanOrEqual(8);
    expect(changes.filter((c) => c.kind === 'agent')).toEqual([expect.objectContaining({ op: 'delete', external_id: 'bot9' })]);
    expect(changes).toHaveLength(8);
    expect(changes.filter((c) => c.kind === 'key' && c.op === 'delete').map((c) => c.id)).toEqual(
      expect.arrayContaining([k1.id, k2.id, k3.id, k4.id]),
    );
    expect(changes.filter((c) => c.kind === 'key')).toHaveLength(4);
    expect(
      changes
        .filter((c) => c.kind === 'oauth_client' && c.op === 'delete')
        .map((c) => c.client_id)
        .sort(),
    ).toEqual([own.client_id, c2.client_id, c3.client_id].sort());

    // A new agent of the same name inherits nothing, and its killswitch reaches nothing of the old one's.
    expect((await call(admin, 'POST', '/v1/agents', { external_id: 'bot9', scope: [] })).status).toBe(201);
    expect((await call(k1.secret, 'POST', '/v1/keys', { label: 'late', scopes: ['admin'] })).status).toBe(401);
    const later = await newKey(admin, 'after the re-registration');
    expect((await call(admin, 'DELETE', '/v1/agents/bot9')).body).toEqual({ external_id: 'bot9', grants_removed: 0, clients_removed: 0 });
    expect((await call(later.secret, 'GET', '/v1/keys')).status).toBe(200);
    expect((await call(bystander.secret, 'GET', '/v1/keys')).status).toBe(200);
  });

  it("reaches what a client bound to another agent made, when this agent's authority made that client", async () => {
    const admin = tenant.adminKey;
    for (const id of ['maker', 'actor']) expect((await call(admin, 'POST', '/v1/agents', { external_id: id, scope: [] })).status).toBe(201);
    const makers = await newClient(admin, { name: 'maker', agent: 'maker' });
    // The maker's token registers a client acting as the other agent; that client's token makes a key.
    const actorClient = await newClient(await clientToken(makers.client_id, makers.client_secret), { name: 'as actor', agent: 'actor' });
    const key = await newKey(await clientToken(actorClient.client_id, actorClient.client_secret), 'made as actor');

    expect((await call(admin, 'DELETE', '/v1/agents/maker')).body).toEqual({ external_id: 'maker', grants_removed: 0, clients_removed: 2 });
    expect((await call(key.secret, 'GET', '/v1/keys')).status).toBe(401);
    expect((await call(admin, 'GET', '/v1/agents/actor')).status).toBe(200);
  });

  it('refuses a key or client made, on another node still holding the credential as verified, after the kill', async () => {
    const admin = tenant.adminKey;
    expect((await call(admin, 'POST', '/v1/agents', { external_id: 'late', scope: [] })).status).toBe(201);
    const own = await newClient(admin, { name: 'late', agent: 'late' });
    const agentKey = await newKey(await clientToken(own.client_id, own.client_secret), 'late');
    const there = client(otherNode, agentKey.secret);
    // The clock stands still, so that the other node's verification of the key stays fresh (it lasts 500 ms).
    vi.useFakeTimers({ toFake: ['Date'] });
    expect((await there.get('/v1/keys')).status).toBe(200);

    expect((await call(admin, 'DELETE', '/v1/agents/late')).status).toBe(200);
    // The other node still admits the key from its memory, but nothing is made on it.
    expect((await there.get('/v1/keys')).status).toBe(200);
    const key = await there.post('/v1/keys', { label: 'after the kill', scopes: ['admin'] });
    expect(key.status).toBe(401);
    expect(key.body.type).toBe('unauthenticated');
    expect(key.headers['www-authenticate']).toMatch(/^Bearer realm="grantd", resource_metadata="[^"]+", error="invalid_token"$/);
    const made = await there.post('/v1/oauth/clients', { name: 'after the kill', type: 'confidential', scopes: ['admin'] });
    expect(made.status).toBe(401);
    const keys = ((await call(admin, 'GET', '/v1/keys')).body as { keys: { label: string }[] }).keys;
    expect(keys.map((k) => k.label)).not.toContain('after the kill');
  });
});
