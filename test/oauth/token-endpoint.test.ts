import { beforeAll, describe, expect, it } from 'vitest';
import { tenantNameOf } from '../../src/store/tenants.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, authorizationCode, authorizeQuery, basic, form, REDIRECT_URI, useOAuthServer } from './support.ts';

// What a new user's trial found on the protocol routes: scopes that are no scope of grantd, an
// admin client narrowing its tokens, RFC 6749's error codes and headers, the consent redirect's URL.

const server = useOAuthServer();
let tenant: TestTenant;

async function newClient(body: Record<string, unknown>) {
  const res = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', ...body });
  expect(res.status).toBe(201);
  return res.body as { client_id: string; client_secret: string };
}

const credentials = (client: { client_id: string; client_secret: string }, scope?: string) =>
  form(
    server.issuer,
    '/v1/oauth/token',
    { grant_type: 'client_credentials', ...(scope === undefined ? {} : { scope }) },
    basic(client.client_id, client.client_secret),
  );

const recordsOf = (clientId: string) => server.services.db.oAuthRecord.count({ where: { clientId } });

/** The authorization code flow without a browser, approved with the tenant's admin key: the tokens. */
async function codeFlow(clientId: string, scope: string) {
  const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, scope);
  const tokens = await form(server.issuer, '/v1/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    client_id: clientId,
  });
  expect(tokens.status).toBe(200);
  return tokens.body as { access_token: string; refresh_token: string; scope: string };
}

beforeAll(async () => {
  tenant = await newTenant(server.services);
});

describe('a scope naming what is no scope of grantd', () => {
  it('is invalid_scope on client_credentials, storing nothing; an absent scope is the client’s own', async () => {
    const client = await newClient({ scopes: ['check:read', 'grant:read'] });
    for (const scope of ['bogus', 'check:read bogus', 'offline_access', 'openid']) {
      const res = await credentials(client, scope);
      expect(res, scope).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    }
    expect(await recordsOf(client.client_id)).toBe(0);
    expect(await credentials(client)).toMatchObject({ status: 200, body: { scope: 'check:read grant:read' } });
    expect(await credentials(client, 'grant:read')).toMatchObject({ status: 200, body: { scope: 'grant:read' } });
  });

  it('is invalid_scope on refresh_token and on /authorize (redirected to the client, RFC 6749 4.1.2.1)', async () => {
    const pub = await newClient({ type: 'public', scopes: ['check:read', 'grant:read'], redirect_uris: [REDIRECT_URI] });
    const res = await fetch(`${server.issuer}/v1/oauth/authorize?${authorizeQuery(pub.client_id, 'check:read bogus')}`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const location = new URL(res.headers.get('location')!);
    expect(location.origin + location.pathname).toBe(REDIRECT_URI);
    expect(Object.fromEntries(location.searchParams)).toMatchObject({ error: 'invalid_scope', state: 'st', iss: server.issuer });

    const tokens = await codeFlow(pub.client_id, 'check:read grant:read');
    const refresh = (scope: string, refreshToken: string) =>
      form(server.issuer, '/v1/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: pub.client_id, scope });
    expect(await refresh('check:read bogus', tokens.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    // The refused request used nothing up: the refresh token narrows as before.
    expect(await refresh('check:read', tokens.refresh_token)).toMatchObject({ status: 200, body: { scope: 'check:read' } });
  });
});

describe('an admin client', () => {
  it('obtains narrower tokens, carrying exactly the scope asked for; a client without admin still cannot widen', async () => {
    const admin = await newClient({ scopes: ['admin'] });
    expect(await credentials(admin)).toMatchObject({ status: 200, body: { scope: 'admin' } });
    for (const scope of ['check:read', 'grant:read grant:write', 'check:read grant:read grant:write', 'admin check:read']) {
      const res = await credentials(admin, scope);
      expect(res, scope).toMatchObject({ status: 200, body: { scope } });
    }
    const narrow = (await credentials(admin, 'check:read')).body as { access_token: string };
    expect((await api(server.issuer, narrow.access_token, 'GET', '/v1/namespaces')).status).toBe(403);

    // The same on /authorize: an admin client's request for check:read goes on to the consent page.
    const pub = await newClient({ type: 'public', scopes: ['admin'], redirect_uris: [REDIRECT_URI] });
    const asked = await fetch(`${server.issuer}/v1/oauth/authorize?${authorizeQuery(pub.client_id, 'check:read')}`, { redirect: 'manual' });
    expect(asked.headers.get('location')).toContain('/v1/oauth/consent/');
    expect((await codeFlow(pub.client_id, 'check:read grant:read')).scope).toBe('check:read grant:read');

    const reader = await newClient({ scopes: ['check:read'] });
    expect(await credentials(reader, 'grant:read')).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
    expect(await credentials(reader, 'admin')).toMatchObject({ status: 400, body: { error: 'invalid_scope' } });
  });
});

describe('the tokens issued', () => {
  it('name the tenant they act in, the client’s, on every grant type (docs/oauth.md#tokens)', async () => {
    const other = await newTenant(server.services);
    const named = async (id: string) => ({ id, name: await tenantNameOf(server.services.db, id) });
    const confidential = await newClient({ scopes: ['check:read'] });
    expect((await credentials(confidential)).body).toMatchObject({ tenant: await named(tenant.id) });
    const pub = await newClient({ type: 'public', scopes: ['admin'], redirect_uris: [REDIRECT_URI] });
    const tokens = await codeFlow(pub.client_id, 'admin');
    expect(tokens).toMatchObject({ tenant: await named(tenant.id) });
    const renewed = await form(server.issuer, '/v1/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: pub.client_id,
    });
    expect(renewed).toMatchObject({ status: 200, body: { tenant: await named(tenant.id) } });
    // Another tenant's client, its own.
    const theirs = await api(server.issuer, other.adminKey, 'POST', '/v1/oauth/clients', {
      name: 'svc',
      type: 'confidential',
      scopes: ['check:read'],
    });
    const { client_id, client_secret } = theirs.body as { client_id: string; client_secret: string };
    const answer = await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, basic(client_id, client_secret));
    expect(answer).toMatchObject({ status: 200, body: { tenant: await named(other.id) } });
  });
});

describe("the token endpoint's errors (RFC 6749 5.2)", () => {
  it('answers no client authentication at all with 401 invalid_client and a Basic challenge', async () => {
    const res = await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' });
    expect(res).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    expect(res.headers.get('www-authenticate')).toMatch(/^Basic /);
  });

  it('answers an unsupported client authentication method (Bearer) on revoke and token with 401 invalid_client', async () => {
    for (const path of ['/v1/oauth/revoke', '/v1/oauth/token']) {
      const res = await form(server.issuer, path, { token: 'x', grant_type: 'client_credentials' }, `Bearer ${tenant.adminKey}`);
      expect(res, path).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
      expect(res.headers.get('www-authenticate'), path).toMatch(/^Basic /);
      expect(JSON.stringify(res.body)).not.toContain(tenant.adminKey);
    }
    // Introspection takes a Bearer key as documented.
    expect((await form(server.issuer, '/v1/oauth/introspect', { token: 'x' }, `Bearer ${tenant.adminKey}`)).body).toEqual({ active: false });
    // Two mechanisms at once stay invalid_request (RFC 6749 5.2).
    const client = await newClient({ scopes: ['check:read'] });
    const both = await form(
      server.issuer,
      '/v1/oauth/token',
      { grant_type: 'client_credentials', client_secret: client.client_secret },
      basic(client.client_id, client.client_secret),
    );
    expect(both).toMatchObject({ status: 400, body: { error: 'invalid_request' } });
  });

  it('answers a grant type the client may not use with 400 unauthorized_client', async () => {
    const client = await newClient({ scopes: ['check:read'] });
    for (const grant_type of ['authorization_code', 'refresh_token']) {
      const res = await form(
        server.issuer,
        '/v1/oauth/token',
        { grant_type, code: 'x', refresh_token: 'x' },
        basic(client.client_id, client.client_secret),
      );
      expect(res, grant_type).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
    }
    const pub = await newClient({ type: 'public', scopes: ['check:read'], redirect_uris: [REDIRECT_URI] });
    const res = await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials', client_id: pub.client_id });
    expect(res).toMatchObject({ status: 400, body: { error: 'unauthorized_client' } });
  });

  it('sends Cache-Control: no-store and Pragma: no-cache on every answer, errors included', async () => {
    const client = await newClient({ scopes: ['check:read'] });
    for (const res of [
      await credentials(client),
      await credentials(client, 'bogus'),
      await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }),
      await form(server.issuer, '/v1/oauth/token', { grant_type: 'password' }, basic(client.client_id, client.client_secret)),
    ]) {
      expect(res.headers.get('cache-control')).toBe('no-store');
      expect(res.headers.get('pragma')).toBe('no-cache');
    }
  });
});

describe('the authorization request', () => {
  it('redirects to the consent page at an absolute URL under GRANTD_PUBLIC_URL', async () => {
    const pub = await newClient({ type: 'public', scopes: ['check:read'], redirect_uris: [REDIRECT_URI] });
    const res = await fetch(`${server.issuer}/v1/oauth/authorize?${authorizeQuery(pub.client_id, 'check:read')}`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(new RegExp(`^${server.issuer}/v1/oauth/consent/[A-Za-z0-9_-]+$`));
  });
});
