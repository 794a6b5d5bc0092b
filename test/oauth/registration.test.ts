import { randomBytes } from 'node:crypto';
import { discoverAuthorizationServerMetadata, registerClient } from '@modelcontextprotocol/sdk/client/auth.js';
import pino from 'pino';
import supertest from 'supertest';
import { beforeAll, describe, expect, it } from 'vitest';
import { accessTokenDigest } from '../../src/store/oauth-tokens.ts';
import { startUnboundClientSweep, sweepUnboundClients, UNBOUND_CLIENT_TTL_MS } from '../../src/store/oauth-clients.ts';
import { newTenant, useApp, type TestTenant } from '../helpers.ts';
import { api, approved, authorizationCode, authorizeQuery, consentPageOf, form, newPublicClient, REDIRECT_URI, useOAuthServer } from './support.ts';

// Dynamic client registration (docs/oauth.md#dynamic-client-registration): a client registers
// itself, its first consent binds it to the signing-in key's tenant for good, and only then can it
// get a token, in that tenant only.

// Many registrations from one address here; the limit is shown on a server of its own below.
// Many authorizations from one address: past the default GRANTD_AUTHORIZE_LIMIT the later ones would be 429 pages.
const server = useOAuthServer({ registerLimit: 1000, authorizeLimit: 1000 });
// A server of its own for the limit, so that the other tests' address is not shut out.
const REGISTER_LIMIT = 2;
const limited = useApp({ registerLimit: REGISTER_LIMIT });
let tenantA: TestTenant;
let tenantB: TestTenant;

beforeAll(async () => {
  [tenantA, tenantB] = await Promise.all([newTenant(server.services), newTenant(server.services)]);
  for (const tenant of [tenantA, tenantB]) await api(server.issuer, tenant.adminKey, 'POST', '/v1/namespaces', { name: 'doc' });
});

const MCP_SCOPES = 'check:read grant:read grant:write';

/** POSTs client metadata to the registration endpoint. */
const register = (metadata: object) => supertest(server.issuer).post('/v1/oauth/register').send(metadata);

/** A client registered with REDIRECT_URI (the support helpers' redirect) and these metadata; its client_id. */
async function registered(metadata: object = {}): Promise<string> {
  const res = await register({ redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none', ...metadata });
  expect(res.status).toBe(201);
  return (res.body as { client_id: string }).client_id;
}

/** The client's code approved with `key`, redeemed with PKCE: the token endpoint's answer. */
async function tokenFor(clientId: string, key: string, scope = MCP_SCOPES) {
  const { code, verifier } = await authorizationCode(server.issuer, key, clientId, scope);
  return form(server.issuer, '/v1/oauth/token', {
    grant_type: 'authorization_code',
    code,
    code_verifier: verifier,
    redirect_uri: REDIRECT_URI,
    client_id: clientId,
  });
}

const clientIdsOf = async (tenant: TestTenant) =>
  ((await api(server.issuer, tenant.adminKey, 'GET', '/v1/oauth/clients')).body as { clients: { client_id: string }[] }).clients.map(
    (client) => client.client_id,
  );

describe('the registration endpoint', () => {
  it('is advertised in the authorization server metadata (RFC 8414)', async () => {
    const res = await supertest(server.issuer).get('/.well-known/oauth-authorization-server');
    expect(res.body.registration_endpoint).toBe(`${server.issuer}/v1/oauth/register`);
  });

  it("registers the MCP SDK's client, found by its discovery", async () => {
    const metadata = await discoverAuthorizationServerMetadata(server.issuer);
    const info = await registerClient(server.issuer, {
      metadata,
      clientMetadata: {
        client_name: 'MCP SDK client',
        redirect_uris: ['http://localhost:33418/callback'],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
        token_endpoint_auth_method: 'none',
      },
      scope: MCP_SCOPES,
    });
    expect(info).toMatchObject({ client_id: expect.stringMatching(/^oc_/), token_endpoint_auth_method: 'none', scope: MCP_SCOPES });
  });

  it('registers a public client: 201, not cached, with its client_id and metadata (RFC 7591 3.2.1)', async () => {
    const res = await register({
      redirect_uris: ['http://127.0.0.1:33418/callback'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      client_name: 'Claude Code',
      scope: 'check:read grant:read',
      logo_uri: 'https://ignored.example/logo.png',
    });
    expect(res.status).toBe(201);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({
      client_id: expect.stringMatching(/^oc_[A-Za-z0-9]{20}$/),
      client_id_issued_at: expect.any(Number),
      client_name: 'Claude Code',
      redirect_uris: ['http://127.0.0.1:33418/callback'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      scope: 'check:read grant:read',
    });
    expect(Math.abs(res.body.client_id_issued_at - Date.now() / 1000)).toBeLessThan(60);
  });

  it("defaults to a public client with MCP's scopes, named after its redirect host", async () => {
    const res = await register({ redirect_uris: ['https://tools.example/cb'] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ token_endpoint_auth_method: 'none', scope: MCP_SCOPES, client_name: 'tools.example' });
  });

  it.each(['http://127.0.0.1:5555/cb', 'http://[::1]:8080/cb', 'http://localhost:1234/cb', 'http://localhost/cb', 'https://app.example:8443/cb'])(
    'takes the redirect URI %s (https, or loopback http on any port)',
    async (uri) => {
      expect((await register({ redirect_uris: [uri] })).status).toBe(201);
    },
  );

  it.each([
    ['a confidential client', { token_endpoint_auth_method: 'client_secret_basic' }, 'invalid_client_metadata'],
    ['client_secret_post', { token_endpoint_auth_method: 'client_secret_post' }, 'invalid_client_metadata'],
    ['client_credentials', { grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
    ['refresh_token alone', { grant_types: ['refresh_token'] }, 'invalid_client_metadata'],
    ['the implicit flow', { response_types: ['token'] }, 'invalid_client_metadata'],
    ['a scope grantd does not have', { scope: 'check:read openid' }, 'invalid_client_metadata'],
    ['an empty scope', { scope: '' }, 'invalid_client_metadata'],
    ['a name with U+0000', { client_name: 'a\u0000b' }, 'invalid_client_metadata'],
    ['plain http to another host', { redirect_uris: ['http://app.example/cb'] }, 'invalid_redirect_uri'],
    ['http to a host named like loopback', { redirect_uris: ['http://127.0.0.1.evil.example/cb'] }, 'invalid_redirect_uri'],
    ['a private-use scheme', { redirect_uris: ['com.example.app:/cb'] }, 'invalid_redirect_uri'],
    ['a fragment', { redirect_uris: ['https://app.example/cb#x'] }, 'invalid_redirect_uri'],
    ['a relative URI', { redirect_uris: ['/cb'] }, 'invalid_redirect_uri'],
    ['no redirect URI', { redirect_uris: [] }, 'invalid_redirect_uri'],
  ])('refuses %s with 400 %s (RFC 7591 3.2.2)', async (_what, metadata, error) => {
    const res = await register({ redirect_uris: [REDIRECT_URI], ...metadata });
    expect(res.status).toBe(400);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({ error, error_description: expect.any(String) });
  });

  it('refuses a body that is not a JSON object', async () => {
    for (const res of [
      await supertest(server.issuer).post('/v1/oauth/register').type('form').send('redirect_uris=https://app.example/cb'),
      await supertest(server.issuer).post('/v1/oauth/register').type('json').send('{"redirect_uris": ['),
      await supertest(server.issuer).post('/v1/oauth/register').type('json').send('["https://app.example/cb"]'),
    ]) {
      expect(res.status).toBe(400);
      expect(res.body.error).toBe('invalid_client_metadata');
    }
  });
});

describe('a client that registered itself', () => {
  it('is in no tenant before its first consent, and gets no token', async () => {
    const clientId = await registered();
    expect(await clientIdsOf(tenantA)).not.toContain(clientId);
    expect(await clientIdsOf(tenantB)).not.toContain(clientId);
    expect((await api(server.issuer, tenantA.adminKey, 'DELETE', `/v1/oauth/clients/${clientId}`)).status).toBe(404);
    const credentials = await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials', client_id: clientId });
    expect(credentials.status).toBe(400);
    expect(credentials.body).toMatchObject({ error: 'unauthorized_client' });
  });

  it('goes through the whole flow: consent page, binding, code with PKCE, token, API', async () => {
    const clientId = await registered({ client_name: 'Notes agent' });
    const page = await consentPageOf(server.issuer, authorizeQuery(clientId, MCP_SCOPES));
    const html = await (await fetch(page.url, { headers: { cookie: page.cookies.join('; ') } })).text();
    expect(html).toContain('Notes agent');
    expect(html).toContain('This application registered itself');
    expect(html).toContain('<code>app.example</code>');
    expect(html).toContain('binds it to the tenant of your API key');

    const token = await tokenFor(clientId, tenantA.adminKey);
    expect(token.status).toBe(200);
    const { access_token: accessToken, refresh_token: refreshToken, scope } = token.body as Record<string, string>;
    expect(scope).toBe(MCP_SCOPES);
    expect(refreshToken).toMatch(/^svc_rt_/);
    const write = await api(server.issuer, accessToken!, 'POST', '/v1/grants', { subject: 'user:ann', relation: 'viewer', object: 'doc:reg' });
    expect(write.status).toBe(201);

    const listed = (await api(server.issuer, tenantA.adminKey, 'GET', '/v1/oauth/clients')).body as { clients: Record<string, unknown>[] };
    expect(listed.clients.find((client) => client.client_id === clientId)).toMatchObject({
      name: 'Notes agent',
      type: 'public',
      registered: 'dynamic',
      redirect_uris: [REDIRECT_URI],
      scopes: MCP_SCOPES.split(' '),
      agent: null,
    });
    expect(await clientIdsOf(tenantB)).not.toContain(clientId);

    // Its binding is the client's creation in the tenant's changes feed.
    const feed = (await api(server.issuer, tenantA.adminKey, 'GET', '/v1/changes?limit=1000')).body as { changes: Record<string, unknown>[] };
    expect(feed.changes.find((change) => change.client_id === clientId)).toMatchObject({ kind: 'oauth_client', op: 'create', registered: 'dynamic' });
  });

  it("is bound for good: a later consent with another tenant's key is refused, with its own tenant's taken", async () => {
    const clientId = await registered();
    expect((await tokenFor(clientId, tenantA.adminKey)).status).toBe(200);

    const refused = await approved(server.issuer, tenantB.adminKey, authorizeQuery(clientId, MCP_SCOPES));
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('of another tenant');
    expect(await clientIdsOf(tenantB)).not.toContain(clientId);

    const again = await tokenFor(clientId, tenantA.adminKey);
    expect(again.status).toBe(200);
    const consentPage = await consentPageOf(server.issuer, authorizeQuery(clientId, MCP_SCOPES));
    const html = await (await fetch(consentPage.url, { headers: { cookie: consentPage.cookies.join('; ') } })).text();
    expect(html).toContain('This application registered itself');
    expect(html).not.toContain('binds it');
  });

  it("bound to one tenant, never acts in another: its token's writes and introspection stay in its tenant", async () => {
    const clientId = await registered();
    const accessToken = ((await tokenFor(clientId, tenantB.adminKey)).body as Record<string, string>).access_token!;
    const object = `doc:${randomBytes(4).toString('hex')}`;
    expect((await api(server.issuer, accessToken, 'POST', '/v1/grants', { subject: 'user:bo', relation: 'viewer', object })).status).toBe(201);
    const check = { subject: 'user:bo', relation: 'viewer', object };
    expect((await api(server.issuer, tenantB.adminKey, 'POST', '/v1/check', check)).body).toMatchObject({ allowed: true });
    expect((await api(server.issuer, tenantA.adminKey, 'POST', '/v1/check', check)).body).toMatchObject({ allowed: false });
    const introspect = (key: string) =>
      form(server.issuer, '/v1/oauth/introspect', { token: accessToken }, `Bearer ${key}`).then((res) => res.body as Record<string, unknown>);
    expect(await introspect(tenantB.adminKey)).toMatchObject({ active: true, client_id: clientId });
    expect(await introspect(tenantA.adminKey)).toEqual({ active: false });
  });

  it('bound by one of two first consents at once, with keys of two tenants: the other is refused', async () => {
    const clientId = await registered();
    // Both pages are shown while the client is of no tenant yet.
    const pages = await Promise.all([tenantA, tenantB].map(() => consentPageOf(server.issuer, authorizeQuery(clientId, MCP_SCOPES))));
    const answers = await Promise.all(
      [tenantA, tenantB].map((tenant, i) =>
        fetch(pages[i]!.url, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: pages[i]!.cookies.join('; ') },
          body: new URLSearchParams({ csrf: pages[i]!.csrf, decision: 'approve', api_key: tenant.adminKey }).toString(),
        }),
      ),
    );
    expect(answers.map((res) => res.status).sort()).toEqual([303, 403]);
    const refused = answers.find((res) => res.status === 403)!;
    // Refused at the binding, or, when the other consent had bound it already, as a key of another tenant is.
    expect(await refused.text()).toMatch(/bound to another tenant|of another tenant/);
    const winner = answers[0]!.status === 303 ? tenantA : tenantB;
    const loser = winner === tenantA ? tenantB : tenantA;
    expect(await clientIdsOf(winner)).toContain(clientId);
    expect(await clientIdsOf(loser)).not.toContain(clientId);
  });

  it('is not bound by a denied consent', async () => {
    const clientId = await registered();
    const page = await consentPageOf(server.issuer, authorizeQuery(clientId, MCP_SCOPES));
    const denied = await fetch(page.url, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: page.cookies.join('; ') },
      body: new URLSearchParams({ csrf: page.csrf, decision: 'deny' }).toString(),
    });
    expect(denied.status).toBe(303);
    expect(await clientIdsOf(tenantA)).not.toContain(clientId);
    expect((await tokenFor(clientId, tenantB.adminKey)).status).toBe(200);
    expect(await clientIdsOf(tenantB)).toContain(clientId);
  });

  it('a token stored for a client never bound speaks for no tenant (401)', async () => {
    const clientId = await registered();
    const token = `svc_at_${randomBytes(32).toString('base64url').slice(0, 43)}`;
    await server.services.db.oAuthRecord.create({
      data: {
        kind: 'AccessToken',
        id: accessTokenDigest(token),
        payload: { scope: 'check:read', clientId },
        clientId,
        expiresAt: new Date(Date.now() + 60_000),
      },
    });
    expect((await api(server.issuer, token, 'GET', '/v1/namespaces')).status).toBe(401);
  });

  it("is deleted by its tenant's admin, and its tokens stop working", async () => {
    const clientId = await registered();
    const accessToken = ((await tokenFor(clientId, tenantA.adminKey)).body as Record<string, string>).access_token!;
    expect((await api(server.issuer, tenantB.adminKey, 'DELETE', `/v1/oauth/clients/${clientId}`)).status).toBe(404);
    expect((await api(server.issuer, tenantA.adminKey, 'DELETE', `/v1/oauth/clients/${clientId}`)).status).toBe(204);
    expect(await clientIdsOf(tenantA)).not.toContain(clientId);
    expect((await api(server.issuer, accessToken, 'GET', '/v1/namespaces')).status).toBe(401);
  });

  it('is told from the clients an admin made', async () => {
    const clientId = await newPublicClient(server.issuer, tenantA.adminKey);
    const listed = (await api(server.issuer, tenantA.adminKey, 'GET', '/v1/oauth/clients')).body as { clients: Record<string, unknown>[] };
    expect(listed.clients.find((client) => client.client_id === clientId)).toMatchObject({ registered: 'admin' });
  });
});

describe('the limits of registration', () => {
  it(`takes ${REGISTER_LIMIT} registrations an hour per client address, then 429 with Retry-After`, async () => {
    const request = () =>
      supertest(limited.app)
        .post('/v1/oauth/register')
        .send({ redirect_uris: [REDIRECT_URI] });
    for (let i = 0; i < REGISTER_LIMIT; i++) expect((await request()).status).toBe(201);
    const refused = await request();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(REGISTER_LIMIT);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(3600);
    expect(refused.headers['cache-control']).toBe('no-store');
    expect(refused.body).toEqual({ error: 'temporarily_unavailable', error_description: expect.stringContaining('too many registrations') });
  });
});

describe('the sweep of clients never bound', () => {
  const backdate = (clientId: string, ms: number) =>
    server.services.db.oAuthClient.update({ where: { clientId }, data: { createdAt: new Date(Date.now() - ms) } });
  const exists = async (clientId: string) => (await server.services.db.oAuthClient.count({ where: { clientId } })) === 1;

  it('deletes those registered 24 hours ago or more, and leaves bound and younger ones', async () => {
    const [old, young, bound] = [await registered(), await registered(), await registered()];
    expect((await tokenFor(bound, tenantA.adminKey)).status).toBe(200);
    await backdate(old, UNBOUND_CLIENT_TTL_MS + 1000);
    await backdate(young, UNBOUND_CLIENT_TTL_MS - 60_000);
    await backdate(bound, UNBOUND_CLIENT_TTL_MS + 1000);
    await sweepUnboundClients(server.services.db, new Date(Date.now() - UNBOUND_CLIENT_TTL_MS), 1000);
    expect(await exists(old)).toBe(false);
    expect(await exists(young)).toBe(true);
    expect(await exists(bound)).toBe(true);
    expect(await clientIdsOf(tenantA)).toContain(bound);
  });

  it('runs in the background, on the clock it is given', async () => {
    const clientId = await registered();
    // An hour old, and a clock 23 hours ahead: only the given clock makes it due, and the sweep, which
    // spans tenants, reaches no client younger than an hour (another file's, run beside this one).
    const hour = 3_600_000;
    await backdate(clientId, hour);
    const ahead = { now: () => Date.now() + UNBOUND_CLIENT_TTL_MS - hour + 1000 };
    const stop = startUnboundClientSweep(server.services.db, { intervalMs: 20, clock: ahead }, pino({ level: 'silent' }));
    try {
      await expect.poll(() => exists(clientId), { timeout: 5_000 }).toBe(false);
    } finally {
      stop();
    }
  });
});

describe('a loopback redirect URI (RFC 8252 7.3)', () => {
  it('may name another port at the request, for a native application only, and must be repeated as sent', async () => {
    const clientId = await registered({ redirect_uris: ['http://127.0.0.1:33418/callback'] });
    const verifier = randomBytes(32).toString('base64url');
    const elsewhere = 'http://127.0.0.1:49152/callback';
    const back = await approved(server.issuer, tenantA.adminKey, authorizeQuery(clientId, MCP_SCOPES, verifier, { redirect_uri: elsewhere }));
    expect(back.headers.get('location')).toMatch(new RegExp(`^${elsewhere.replaceAll('.', '\\.')}\\?code=`));
    const code = new URL(back.headers.get('location')!).searchParams.get('code')!;
    const exchange = (redirectUri: string) =>
      form(server.issuer, '/v1/oauth/token', {
        grant_type: 'authorization_code',
        code,
        code_verifier: verifier,
        client_id: clientId,
        redirect_uri: redirectUri,
      });
    expect((await exchange('http://127.0.0.1:33418/callback')).status).toBe(400);
    expect((await exchange(elsewhere)).status).toBe(200);
    // Another path or host is no loopback port's variation; an https client is no native application.
    for (const uri of ['http://127.0.0.1:49152/other', 'http://localhost:33418/callback']) {
      const page = await fetch(`${server.issuer}/v1/oauth/authorize?${authorizeQuery(clientId, MCP_SCOPES, verifier, { redirect_uri: uri })}`, {
        redirect: 'manual',
      });
      expect(page.status, uri).toBe(400);
    }
    const web = await registered({ redirect_uris: ['https://app.example:8443/cb'] });
    const other = await fetch(
      `${server.issuer}/v1/oauth/authorize?${authorizeQuery(web, MCP_SCOPES, verifier, { redirect_uri: 'https://app.example:9443/cb' })}`,
      { redirect: 'manual' },
    );
    expect(other.status).toBe(400);
  });
});
