import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, approved, authorizeQuery, basic, form, newPublicClient, REDIRECT_URI, useOAuthServer } from './support.ts';

// RFC 8707 (docs/oauth.md#resource-indicators): `resource` names the whole server, the API or the
// MCP endpoint; the token's audience is that resource, refused by the other one.

const server = useOAuthServer({ authorizeLimit: 1_000_000 });
let tenant: TestTenant;

beforeAll(async () => {
  tenant = await newTenant(server.services);
});

interface Tokens {
  access_token: string;
  refresh_token: string;
}

const named = (resource: string | undefined): Record<string, string> => (resource === undefined ? {} : { resource });

/** The token endpoint's answer to an authorization-code grant approved with the admin key, `resource` sent at authorize and `atToken` at the token endpoint when given. */
async function redeemed(resource: string | undefined, atToken = resource) {
  const clientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read', 'grant:read']);
  const verifier = randomBytes(32).toString('base64url');
  const back = await approved(server.issuer, tenant.adminKey, authorizeQuery(clientId, 'check:read grant:read', verifier, named(resource)));
  const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
  const res = await form(server.issuer, '/v1/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    client_id: clientId,
    ...named(atToken),
  });
  return { clientId, res };
}

async function tokensFor(resource?: string, atToken = resource): Promise<{ clientId: string; tokens: Tokens }> {
  const { clientId, res } = await redeemed(resource, atToken);
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return { clientId, tokens: res.body as unknown as Tokens };
}

/** The status of a call to the API and of one to the MCP endpoint, with the 401s' challenges. */
async function answersOf(token: string) {
  const onApi = await api(server.issuer, token, 'GET', '/v1/namespaces');
  const onMcp = await fetch(`${server.issuer}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
  });
  await onMcp.arrayBuffer();
  return {
    api: onApi.status,
    apiChallenge: onApi.headers.get('www-authenticate'),
    mcp: onMcp.status,
    mcpChallenge: onMcp.headers.get('www-authenticate'),
  };
}

const introspect = async (token: string) =>
  (await api(server.issuer, tenant.adminKey, 'GET', `/v1/oauth/introspect?token=${encodeURIComponent(token)}`)).body;

describe('resource indicators (RFC 8707)', () => {
  it('binds a token for <issuer>/mcp to the MCP endpoint: 401 invalid_token on /v1, naming the API document', async () => {
    const { tokens } = await tokensFor(`${server.issuer}/mcp`);
    const answers = await answersOf(tokens.access_token);
    expect(answers.mcp).toBe(200);
    expect(answers.api).toBe(401);
    expect(answers.apiChallenge).toContain('error="invalid_token"');
    expect(answers.apiChallenge).toContain(`resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/v1"`);
    expect(await introspect(tokens.access_token)).toMatchObject({ active: true, aud: `${server.issuer}/mcp` });
  });

  it('binds a token for <issuer>/v1 to the API: 401 invalid_token on /mcp, naming the MCP document; a refreshed one keeps its audience', async () => {
    const { clientId, tokens } = await tokensFor(`${server.issuer}/v1`);
    const answers = await answersOf(tokens.access_token);
    expect(answers.api).toBe(200);
    expect(answers.mcp).toBe(401);
    expect(answers.mcpChallenge).toContain('error="invalid_token"');
    expect(answers.mcpChallenge).toContain(`resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/mcp"`);

    const refreshed = await form(server.issuer, '/v1/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: clientId,
    });
    expect(refreshed.status).toBe(200);
    const renewed = (refreshed.body as unknown as Tokens).access_token;
    expect(await answersOf(renewed)).toMatchObject({ api: 200, mcp: 401 });
    expect(await introspect(renewed)).toMatchObject({ active: true, aud: `${server.issuer}/v1` });
  });

  it.each([
    ['<issuer>', true],
    ['no resource', false],
  ])('makes a token for %s good on both', async (_label, named) => {
    const { tokens } = await tokensFor(named ? server.issuer : undefined);
    expect(await answersOf(tokens.access_token)).toMatchObject({ api: 200, mcp: 200 });
    expect((await introspect(tokens.access_token))?.aud).toBe(named ? server.issuer : undefined);
  });

  it('narrows an authorization for the whole server (<issuer>, or none) to one resource at the token endpoint, never a named one to another', async () => {
    for (const resource of [undefined, server.issuer]) {
      const { tokens } = await tokensFor(resource, `${server.issuer}/mcp`);
      expect(await answersOf(tokens.access_token)).toMatchObject({ api: 401, mcp: 200 });
      expect(await introspect(tokens.access_token)).toMatchObject({ active: true, scope: 'check:read grant:read', aud: `${server.issuer}/mcp` });
    }
    const { res } = await redeemed(`${server.issuer}/v1`, `${server.issuer}/mcp`);
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
  });

  it('refuses any other resource with invalid_target, at authorize and at the token endpoint', async () => {
    const clientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read']);
    const query = authorizeQuery(clientId, 'check:read', undefined, { resource: 'https://elsewhere.example/api' });
    const res = await fetch(`${server.issuer}/v1/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe('invalid_target');

    const made = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', {
      name: 'svc',
      type: 'confidential',
      scopes: ['check:read'],
    });
    const { client_id: id, client_secret: secret } = made.body as { client_id: string; client_secret: string };
    const credentials = (resource: string) =>
      form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials', resource }, basic(id, secret));
    expect(await credentials(`${server.issuer}/v2`)).toMatchObject({ status: 400, body: { error: 'invalid_target' } });
    const mcp = await credentials(`${server.issuer}/mcp`);
    expect(mcp.status).toBe(200);
    const token = (mcp.body as { access_token: string }).access_token;
    expect(await answersOf(token)).toMatchObject({ api: 401, mcp: 200 });
  });
});
