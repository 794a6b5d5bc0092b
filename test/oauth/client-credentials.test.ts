import { libraryStorage } from '../../src/auth/oauth/library-seams.ts';
import * as oauth from 'openid-client';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, basic, discover, form, useOAuthServer } from './support.ts';

// Client credentials as an integration's code would use them, through openid-client: discovery,
// tokens used on the API, introspection across tenants, revocation, deleted clients, the killswitch.

const server = useOAuthServer();
let a: TestTenant;
let b: TestTenant;

async function newClient(tenant: TestTenant, body: Record<string, unknown> = {}) {
  const res = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', {
    name: 'svc',
    type: 'confidential',
    scopes: ['check:read', 'grant:read'],
    ...body,
  });
  expect(res.status).toBe(201);
  return res.body as { client_id: string; client_secret: string };
}

const recordsOf = (clientId: string) => server.services.db.oAuthRecord.count({ where: { clientId } });

beforeAll(async () => {
  a = await newTenant(server.services);
  b = await newTenant(server.services);
});

describe('client credentials', () => {
  it('discovers the RFC 8414 metadata, issues an opaque token, and the token works as a key with its scopes', async () => {
    const { client_id, client_secret } = await newClient(a);
    const config = await discover(server.issuer, client_id, client_secret);
    expect(config.serverMetadata()).toMatchObject({
      issuer: server.issuer,
      token_endpoint: `${server.issuer}/v1/oauth/token`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    });
    const tokens = await oauth.clientCredentialsGrant(config);
    expect(tokens.access_token).toMatch(/^svc_at_[A-Za-z0-9_-]{43}$/);
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: 'check:read grant:read' });
    expect((await api(server.issuer, tokens.access_token, 'GET', '/v1/namespaces')).status).toBe(200);
    const write = await api(server.issuer, tokens.access_token, 'POST', '/v1/namespaces', { name: 'doc' });
    expect(write).toMatchObject({ status: 403, body: { type: 'insufficient-scope' } });
    // RFC 6750 3.1 (docs/oauth.md#protected-resources): the scope needed, and the resource's metadata.
    expect(write.headers.get('www-authenticate')).toBe(
      `Bearer error="insufficient_scope", scope="grant:write", resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/v1"`,
    );
    // Only the digest is stored.
    const rows = await server.services.db.oAuthRecord.findMany({ where: { clientId: client_id } });
    expect(JSON.stringify(rows)).not.toContain(tokens.access_token.slice(7));
  });

  it("switches the library's request context off once its requests have settled, and issues tokens after", async () => {
    const { client_id, client_secret } = await newClient(a, { scopes: ['check:read'] });
    const config = await discover(server.issuer, client_id, client_secret);
    const disable = vi.spyOn(libraryStorage, 'disable');
    try {
      const tokens = await Promise.all([1, 2, 3].map(() => oauth.clientCredentialsGrant(config)));
      expect(disable).toHaveBeenCalled();
      disable.mockClear();
      const after = await oauth.clientCredentialsGrant(config);
      expect(disable).toHaveBeenCalledTimes(1);
      for (const { access_token } of [...tokens, after]) {
        const check = await api(server.issuer, access_token, 'POST', '/v1/check', { subject: 'user:x', relation: 'viewer', object: 'doc:1' });
        expect(check.status).not.toBe(401);
      }
    } finally {
      disable.mockRestore();
    }
  });

  it('narrows with scope and refuses to widen, storing nothing', async () => {
    const { client_id, client_secret } = await newClient(a, { scopes: ['check:read'] });
    const config = await discover(server.issuer, client_id, client_secret);
    expect((await oauth.clientCredentialsGrant(config, { scope: 'check:read' })).scope).toBe('check:read');
    const before = await recordsOf(client_id);
    await expect(oauth.clientCredentialsGrant(config, { scope: 'check:read admin' })).rejects.toMatchObject({ error: 'invalid_scope' });
    expect(await recordsOf(client_id)).toBe(before);
  });

  it('refuses a wrong secret and an unknown client with invalid_client, issuing nothing', async () => {
    const { client_id } = await newClient(a);
    const wrong = await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, basic(client_id, 'svc_cs_wrong'));
    expect(wrong).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    const unknown = await form(server.issuer, '/v1/oauth/token', {
      grant_type: 'client_credentials',
      client_id: 'oc_nobodyxxxxxxxxxxxxx',
      client_secret: 'x',
    });
    expect(unknown).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(await recordsOf(client_id)).toBe(0);
  });

  it('answers malformed forms with RFC 6749 errors, never a 500', async () => {
    for (const fields of [{} as Record<string, string>, { grant_type: 'password' }, { grant_type: 'client_credentials', scope: '\u0000' }]) {
      const res = await form(server.issuer, '/v1/oauth/token', fields);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(res.body).toMatchObject({ error: expect.any(String) });
    }
  });

  it('introspects for the same tenant only: Basic, Bearer key, GET form', async () => {
    const { client_id, client_secret } = await newClient(a);
    const token = (await oauth.clientCredentialsGrant(await discover(server.issuer, client_id, client_secret))).access_token;
    const expected = { active: true, client_id, sub: client_id, scope: 'check:read grant:read', token_type: 'Bearer', iss: server.issuer };
    const byClient = await form(server.issuer, '/v1/oauth/introspect', { token }, basic(client_id, client_secret));
    expect(byClient).toMatchObject({ status: 200, body: expected });
    const byKey = await form(server.issuer, '/v1/oauth/introspect', { token }, `Bearer ${await a.keyWith('check:read')}`);
    expect(byKey).toMatchObject({ status: 200, body: expected });
    const byQuery = await api(server.issuer, a.adminKey, 'GET', `/v1/oauth/introspect?token=${token}`);
    expect(byQuery).toMatchObject({ status: 200, body: expected });
    // Another tenant's key, and another tenant's client, learn nothing.
    expect((await form(server.issuer, '/v1/oauth/introspect', { token }, `Bearer ${b.adminKey}`)).body).toEqual({ active: false });
    const other = await newClient(b);
    expect((await form(server.issuer, '/v1/oauth/introspect', { token }, basic(other.client_id, other.client_secret))).body).toEqual({
      active: false,
    });
    const lacking = await form(server.issuer, '/v1/oauth/introspect', { token }, `Bearer ${await a.keyWith('grant:read')}`);
    expect(lacking).toMatchObject({ status: 403, body: { error: 'insufficient_scope' } });
  });

  it("tells a public client, which has no secret, nothing of another client's token: it may not introspect (RFC 7662 2.1)", async () => {
    const { client_id, client_secret } = await newClient(a);
    const token = (await oauth.clientCredentialsGrant(await discover(server.issuer, client_id, client_secret))).access_token;
    const pub = await newClient(a, { type: 'public', redirect_uris: ['http://localhost:9/cb'] });
    const byPublic = await form(server.issuer, '/v1/oauth/introspect', { token, client_id: pub.client_id });
    expect(byPublic).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
  });

  it('refuses a redirect URI the authorization server could never use (a scheme other than http or https)', async () => {
    const body = { name: 'app', type: 'public', scopes: ['check:read'], redirect_uris: ['com.example.app:/cb'] };
    const res = await api(server.issuer, a.adminKey, 'POST', '/v1/oauth/clients', body);
    expect(res).toMatchObject({ status: 400, body: { type: 'invalid-request' } });
  });

  it('refuses an authorization request holding a NUL character with a 400 page, storing nothing', async () => {
    const pub = await newClient(a, { type: 'public', redirect_uris: ['http://localhost:9/cb'] });
    const query = new URLSearchParams({
      client_id: pub.client_id,
      redirect_uri: 'http://localhost:9/cb',
      response_type: 'code',
      scope: 'check:read',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
      state: 'a\u0000b',
    });
    const res = await fetch(`${server.issuer}/v1/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^text\/html/);
    expect(await recordsOf(pub.client_id)).toBe(0);
  });

  it('revokes (RFC 7009): the token is refused at once', async () => {
    const { client_id, client_secret } = await newClient(a);
    const config = await discover(server.issuer, client_id, client_secret);
    const token = (await oauth.clientCredentialsGrant(config)).access_token;
    expect((await api(server.issuer, token, 'GET', '/v1/namespaces')).status).toBe(200);
    await oauth.tokenRevocation(config, token);
    const refused = await api(server.issuer, token, 'GET', '/v1/namespaces');
    expect(refused).toMatchObject({ status: 401, body: { type: 'unauthenticated' } });
    expect(refused.headers.get('www-authenticate')).toContain(`resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/v1"`);
  });

  it("ends a deleted client's tokens at once", async () => {
    const { client_id, client_secret } = await newClient(a);
    const token = (await oauth.clientCredentialsGrant(await discover(server.issuer, client_id, client_secret))).access_token;
    expect((await api(server.issuer, token, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await api(server.issuer, a.adminKey, 'DELETE', `/v1/oauth/clients/${client_id}`)).status).toBe(204);
    expect((await api(server.issuer, token, 'GET', '/v1/namespaces')).status).toBe(401);
    expect((await api(server.issuer, a.adminKey, 'GET', `/v1/oauth/introspect?token=${token}`)).body).toEqual({ active: false });
    expect(await recordsOf(client_id)).toBe(0);
  });
});

describe("an agent's client", () => {
  it('issues tokens whose sub is the agent; the killswitch ends them with its clients', async () => {
    expect((await api(server.issuer, a.adminKey, 'POST', '/v1/agents', { external_id: 'bot', scope: ['*:*'] })).status).toBe(201);
    const { client_id, client_secret } = await newClient(a, { scopes: ['check:read'], agent: 'bot' });
    const token = (await oauth.clientCredentialsGrant(await discover(server.issuer, client_id, client_secret))).access_token;
    const introspected = await api(server.issuer, a.adminKey, 'GET', `/v1/oauth/introspect?token=${token}`);
    expect(introspected.body).toMatchObject({ active: true, sub: 'agent:bot', client_id });
    expect((await api(server.issuer, token, 'POST', '/v1/check', { subject: 'agent:bot', relation: 'viewer', object: 'user:x' })).status).toBe(200);

    const killed = await api(server.issuer, a.adminKey, 'DELETE', '/v1/agents/bot');
    expect(killed).toMatchObject({ status: 200, body: { external_id: 'bot', grants_removed: 0, clients_removed: 1 } });
    expect((await api(server.issuer, token, 'POST', '/v1/check', { subject: 'agent:bot', relation: 'viewer', object: 'user:x' })).status).toBe(401);
    expect((await api(server.issuer, a.adminKey, 'GET', `/v1/oauth/introspect?token=${token}`)).body).toEqual({ active: false });
    const { clients } = (await api(server.issuer, a.adminKey, 'GET', '/v1/oauth/clients')).body as { clients: { client_id: string }[] };
    expect(clients.map((c) => c.client_id)).not.toContain(client_id);
  });

  it('cannot use the authorization code flow, nor be public', async () => {
    await api(server.issuer, a.adminKey, 'POST', '/v1/agents', { external_id: 'bot2', scope: ['*:*'] });
    const publicAgent = await api(server.issuer, a.adminKey, 'POST', '/v1/oauth/clients', {
      name: 'x',
      type: 'public',
      scopes: ['check:read'],
      agent: 'bot2',
      redirect_uris: ['https://a.example/cb'],
    });
    expect(publicAgent).toMatchObject({ status: 400, body: { type: 'invalid-request' } });
  });
});
