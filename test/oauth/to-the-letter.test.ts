import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import {
  api,
  approved,
  authorizationCode,
  authorizeQuery,
  basic,
  cookiesOf,
  form,
  newPublicClient,
  REDIRECT_URI,
  useOAuthServer,
} from './support.ts';

// RFC 6749, 7009 and 7662 where the library's defaults differ from their letter (docs/oauth.md#errors,
// docs/oauth.md#tokens): a missing scope, who may introspect and revoke, every 401's challenge, and
// error descriptions that say what went wrong.

const server = useOAuthServer({ authorizeLimit: 1_000_000 });
let tenant: TestTenant;

beforeAll(async () => {
  tenant = await newTenant(server.services);
});

const TOKEN = '/v1/oauth/token';

const redeem = (clientId: string, code: string, verifier: string, extra: Record<string, string> = { redirect_uri: REDIRECT_URI }) =>
  form(server.issuer, TOKEN, { grant_type: 'authorization_code', code, code_verifier: verifier, client_id: clientId, ...extra });

async function tokensOf(clientId: string): Promise<{ access_token: string; refresh_token: string }> {
  const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'check:read');
  const res = await redeem(clientId, code, verifier);
  expect(res.status).toBe(200);
  return res.body as { access_token: string; refresh_token: string };
}

async function confidentialClient(): Promise<{ id: string; secret: string }> {
  const made = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', scopes: ['check:read'] });
  const { client_id: id, client_secret: secret } = made.body as { client_id: string; client_secret: string };
  return { id, secret };
}

describe('an authorization request without scope (RFC 6749 3.3)', () => {
  it("asks for the client's registered scopes: the consent page lists them, and the token carries them", async () => {
    const clientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read', 'grant:read']);
    const verifier = randomBytes(32).toString('base64url');
    const query = authorizeQuery(clientId, '', verifier);
    query.delete('scope');
    const started = await fetch(`${server.issuer}/v1/oauth/authorize?${query}`, { redirect: 'manual' });
    const page = await (await fetch(started.headers.get('location')!, { headers: { cookie: cookiesOf(started).join('; ') } })).text();
    expect(page).toContain('(check:read)');
    expect(page).toContain('(grant:read)');

    const back = await approved(server.issuer, tenant.adminKey, query);
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    const res = await redeem(clientId, code, verifier);
    expect(res).toMatchObject({ status: 200, body: { scope: 'check:read grant:read' } });
  });
});

describe('redirect_uri at the token endpoint (RFC 6749 4.1.3)', () => {
  it('is required when the authorization request carried it, and may be left out when that left it out', async () => {
    const clientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read']);
    const carried = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'check:read');
    const refused = await redeem(clientId, carried.code, carried.verifier, {});
    expect(refused).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant', error_description: expect.stringMatching(/redirect_uri is missing/) },
    });
    expect((await redeem(clientId, carried.code, carried.verifier)).status).toBe(200);

    const verifier = randomBytes(32).toString('base64url');
    const query = authorizeQuery(clientId, 'check:read', verifier);
    query.delete('redirect_uri');
    const back = await approved(server.issuer, tenant.adminKey, query);
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    expect((await redeem(clientId, code, verifier, {})).status).toBe(200);
  });
});

describe('introspection (RFC 7662 2.1)', () => {
  it('refuses a public client with 401 invalid_client and a challenge, even for its own token', async () => {
    const clientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read']);
    const { access_token } = await tokensOf(clientId);
    const res = await form(server.issuer, '/v1/oauth/introspect', { token: access_token, client_id: clientId });
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
  });
});

describe('every 401 carries WWW-Authenticate', () => {
  it('also to a client that authenticates in the body (client_secret_post)', async () => {
    const { id } = await confidentialClient();
    const res = await form(server.issuer, TOKEN, { grant_type: 'client_credentials', client_id: id, client_secret: 'wrong' });
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
  });
});

describe('revocation (RFC 7009 2.1)', () => {
  it("refuses another client's token with 400 invalid_grant and leaves it alone; its own client's ends its grant", async () => {
    const owner = await newPublicClient(server.issuer, tenant.adminKey, ['check:read']);
    const { access_token, refresh_token } = await tokensOf(owner);
    const other = await confidentialClient();
    const res = await form(server.issuer, '/v1/oauth/revoke', { token: access_token }, basic(other.id, other.secret));
    expect(res).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    const check = await api(server.issuer, access_token, 'POST', '/v1/check', { subject: 'user:a', relation: 'viewer', object: 'user:b' });
    expect(check.status).toBe(200);
    // Its own client's revocation ends the whole grant, the refresh token included.
    expect((await form(server.issuer, '/v1/oauth/revoke', { token: access_token, client_id: owner })).status).toBe(200);
    const refreshed = await form(server.issuer, TOKEN, { grant_type: 'refresh_token', refresh_token, client_id: owner });
    expect(refreshed).toMatchObject({
      status: 400,
      body: { error: 'invalid_grant', error_description: 'the refresh token is unknown, or its grant has ended' },
    });
  });
});

describe('invalid_grant says why', () => {
  it('tells a wrong PKCE verifier, a replayed code and a reused refresh token apart', async () => {
    const clientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read']);
    const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'check:read');
    const wrongVerifier = await redeem(clientId, code, randomBytes(32).toString('base64url'));
    const first = await redeem(clientId, code, verifier);
    const replayed = await redeem(clientId, code, verifier);
    const tokens = await tokensOf(clientId);
    const refresh = () => form(server.issuer, TOKEN, { grant_type: 'refresh_token', refresh_token: tokens.refresh_token, client_id: clientId });
    expect((await refresh()).status).toBe(200);
    const reused = await refresh();

    expect(first.status).toBe(200);
    const descriptions = [wrongVerifier, replayed, reused].map((res) => {
      expect(res).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
      return (res.body as { error_description: string }).error_description;
    });
    expect(descriptions[0]).toMatch(/code_verifier does not match/);
    expect(descriptions[1]).toMatch(/authorization code was already used/);
    expect(descriptions[2]).toMatch(/refresh token was already used/);
    for (const description of descriptions) expect(description).not.toContain(verifier);
  });
});
