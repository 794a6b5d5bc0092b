import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as oauth from 'openid-client';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, discover, newPublicClient, useOAuthServer } from './support.ts';

// The authorization code flow with PKCE as a user's browser and an integration's code go through
// it: openid-client builds the request and redeems the code, Chromium shows the consent page.

/** Debian's chromium; CI installs it (apt-get install -y chromium). */
const CHROMIUM = '/usr/bin/chromium';
const REDIRECT_URI = 'https://app.example/callback';

const server = useOAuthServer();
let tenant: TestTenant;
let context: BrowserContext;
let userDataDir: string;

beforeAll(async () => {
  tenant = await newTenant(server.services);
  userDataDir = mkdtempSync(join(tmpdir(), 'grantd-oauth-chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu'],
    headless: true,
  });
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

const publicClient = (scopes: string[] = ['check:read', 'grant:read']) => newPublicClient(server.issuer, tenant.adminKey, scopes);

/**
 * Opens the authorization URL, signs in with `key` on the consent page and presses `decision`: the
 * URL the browser was sent back to, the form it posted there (response_mode=form_post), the consent
 * page's policy, and the console's errors meanwhile (a policy's refusals among them).
 */
async function consent(
  url: URL,
  key: string,
  decision: 'Approve' | 'Deny',
): Promise<{ callback: URL; posted: string | null; csp: string | undefined; consoleErrors: string[] }> {
  // One browser for every test, its cookies kept: each test signs in with another key over the previous sign-in.
  const page = await context.newPage();
  try {
    let callback: URL | undefined;
    let posted: string | null = null;
    const consoleErrors: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('request', (request) => {
      if (process.env.DEBUG_OAUTH) console.log(request.method(), request.url());
      if (!request.url().startsWith(REDIRECT_URI)) return;
      callback = new URL(request.url());
      posted = request.postData();
    });
    await page.route(`${REDIRECT_URI}**`, (route) => route.fulfill({ status: 200, body: 'back at the app' }));
    const shown = await page.goto(url.href);
    expect(shown?.status()).toBe(200);
    await expect(page.locator('h1').textContent()).resolves.toContain('Notes app');
    await page.fill('#api_key', key);
    await page.click(`button:has-text("${decision}")`);
    await page.waitForURL(`${REDIRECT_URI}**`, { timeout: 10_000 });
    return { callback: callback!, posted, csp: (await shown!.allHeaders())['content-security-policy'], consoleErrors };
  } finally {
    await page.close();
  }
}

async function authorizationUrl(config: oauth.Configuration, scope: string) {
  const verifier = oauth.randomPKCECodeVerifier();
  const state = oauth.randomState();
  const url = oauth.buildAuthorizationUrl(config, {
    redirect_uri: REDIRECT_URI,
    scope,
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
  });
  return { url, verifier, state };
}

describe('authorization code with PKCE', () => {
  it('signs in on the consent page and redeems the code once: a replayed code ends every token of the grant', async () => {
    const clientId = await publicClient();
    const config = await discover(server.issuer, clientId);
    const { url, verifier, state } = await authorizationUrl(config, 'check:read');
    const signer = await tenant.keyWith('check:read');
    const { callback, csp } = await consent(url, signer, 'Approve');
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('form-action');
    expect(callback.searchParams.get('iss')).toBe(server.issuer);

    const tokens = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect(tokens.access_token).toMatch(/^svc_at_/);
    expect(tokens.refresh_token).toMatch(/^svc_rt_/);
    expect(tokens.scope).toBe('check:read');
    expect((await api(server.issuer, tokens.access_token, 'GET', '/v1/namespaces')).status).toBe(403);
    const introspected = await api(server.issuer, tenant.adminKey, 'GET', `/v1/oauth/introspect?token=${tokens.access_token}`);
    expect(introspected.body).toMatchObject({ active: true, sub: expect.stringMatching(/^key_/), client_id: clientId });

    // The code is single use: a replay is refused and ends the grant.
    await expect(oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state })).rejects.toMatchObject({
      error: 'invalid_grant',
    });

    const { access_token: before } = tokens;
    expect((await api(server.issuer, before, 'POST', '/v1/check', { subject: 'user:a', relation: 'viewer', object: 'user:b' })).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('with response_mode=form_post, posts the code to the client from a page whose policy runs its script', async () => {
    const clientId = await publicClient();
    const config = await discover(server.issuer, clientId);
    const { url, verifier, state } = await authorizationUrl(config, 'check:read');
    url.searchParams.set('response_mode', 'form_post');
    const { callback, posted, consoleErrors } = await consent(url, tenant.adminKey, 'Approve');
    expect(consoleErrors).toEqual([]);
    expect(callback.search).toBe('');
    const fields = Object.fromEntries(new URLSearchParams(posted ?? ''));
    expect(fields).toEqual({ code: expect.any(String), state, iss: server.issuer });
    const back = new URL(`${REDIRECT_URI}?${new URLSearchParams(fields)}`);
    const tokens = await oauth.authorizationCodeGrant(config, back, { pkceCodeVerifier: verifier, expectedState: state });
    expect(
      (await api(server.issuer, tokens.access_token, 'POST', '/v1/check', { subject: 'user:a', relation: 'viewer', object: 'user:b' })).status,
    ).toBe(200);
  });

  it('rotates refresh tokens; a reused one ends every token of the grant', async () => {
    const clientId = await publicClient();
    const config = await discover(server.issuer, clientId);
    const { url, verifier, state } = await authorizationUrl(config, 'check:read grant:read');
    const { callback } = await consent(url, tenant.adminKey, 'Approve');
    const first = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    const second = await oauth.refreshTokenGrant(config, first.refresh_token!);
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect((await api(server.issuer, second.access_token, 'GET', '/v1/namespaces')).status).toBe(200);
    await expect(oauth.refreshTokenGrant(config, first.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await api(server.issuer, second.access_token, 'GET', '/v1/namespaces')).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, second.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it('ends the grant when the key that signed in is revoked', async () => {
    const clientId = await publicClient();
    const config = await discover(server.issuer, clientId);
    const { url, verifier, state } = await authorizationUrl(config, 'grant:read');
    const created = await api(server.issuer, tenant.adminKey, 'POST', '/v1/keys', { scopes: ['grant:read'] });
    const { id, secret } = created.body as { id: string; secret: string };
    const { callback } = await consent(url, secret, 'Approve');
    const tokens = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    expect((await api(server.issuer, tokens.access_token, 'GET', '/v1/namespaces')).status).toBe(200);
    expect((await api(server.issuer, tenant.adminKey, 'DELETE', `/v1/keys/${id}`)).status).toBe(204);
    expect((await api(server.issuer, tokens.access_token, 'GET', '/v1/namespaces')).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
  });

  it("ends the grant when the key that signed in was made on an agent's authority and the agent is killed", async () => {
    const admin = tenant.adminKey;
    expect((await api(server.issuer, admin, 'POST', '/v1/agents', { external_id: 'signer-bot', scope: [] })).status).toBe(201);
    const agents = await api(server.issuer, admin, 'POST', '/v1/oauth/clients', {
      name: 'bot',
      type: 'confidential',
      scopes: ['admin'],
      agent: 'signer-bot',
    });
    const { client_id: botId, client_secret: botSecret } = agents.body as { client_id: string; client_secret: string };
    const botToken = (await oauth.clientCredentialsGrant(await discover(server.issuer, botId, botSecret))).access_token;
    const made = await api(server.issuer, botToken, 'POST', '/v1/keys', { scopes: ['admin'] });
    const { secret } = made.body as { secret: string };

    const clientId = await publicClient(['admin']);
    const config = await discover(server.issuer, clientId);
    const { url, verifier, state } = await authorizationUrl(config, 'admin');
    const { callback } = await consent(url, secret, 'Approve');
    const tokens = await oauth.authorizationCodeGrant(config, callback, { pkceCodeVerifier: verifier, expectedState: state });
    // A key made with the grant's token stands on the signing key's authority, so on the agent's.
    const chained = await api(server.issuer, tokens.access_token, 'POST', '/v1/keys', { scopes: ['grant:read'] });
    expect(chained.status).toBe(201);

    const killed = await api(server.issuer, admin, 'DELETE', '/v1/agents/signer-bot');
    expect(killed.body).toEqual({ external_id: 'signer-bot', grants_removed: 0, clients_removed: 1 });
    expect((await api(server.issuer, secret, 'GET', '/v1/namespaces')).status).toBe(401);
    expect((await api(server.issuer, tokens.access_token, 'GET', '/v1/namespaces')).status).toBe(401);
    expect((await api(server.issuer, (chained.body as { secret: string }).secret, 'GET', '/v1/namespaces')).status).toBe(401);
    await expect(oauth.refreshTokenGrant(config, tokens.refresh_token!)).rejects.toMatchObject({ error: 'invalid_grant' });
    // The public client was the administrator's: it stays.
    const { clients } = (await api(server.issuer, admin, 'GET', '/v1/oauth/clients')).body as { clients: { client_id: string }[] };
    expect(clients.map((c) => c.client_id)).toContain(clientId);
  });

  it('redirects with access_denied when the person denies', async () => {
    const config = await discover(server.issuer, await publicClient());
    const { url, state } = await authorizationUrl(config, 'check:read');
    const { callback } = await consent(url, '', 'Deny');
    expect(Object.fromEntries(callback.searchParams)).toMatchObject({ error: 'access_denied', state, iss: server.issuer });
  });

  it('refuses a key lacking a requested scope on the consent page', async () => {
    const config = await discover(server.issuer, await publicClient());
    const { url } = await authorizationUrl(config, 'check:read grant:read');
    const page = await context.newPage();
    try {
      await page.goto(url.href);
      // The page names the tenant whose key it asks for.
      const { name } = (await server.services.db.tenant.findUnique({ where: { id: tenant.id }, select: { name: true } }))!;
      await expect(page.locator('p', { hasText: 'would be able to' }).textContent()).resolves.toContain(`of tenant ${name} would`);
      await expect(page.locator('label[for=api_key]').textContent()).resolves.toContain(`an API key of tenant ${name} that`);
      await page.fill('#api_key', await tenant.keyWith('check:read'));
      const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('button:has-text("Approve")')]);
      expect(answer.status()).toBe(403);
      await expect(page.locator('[role=alert]').textContent()).resolves.toContain('lacks one of these scopes');
    } finally {
      await page.close();
    }
  });

  it('shows an error page, never a redirect, for an unknown client or redirect URI; refuses plain PKCE and a widened scope', async () => {
    const clientId = await publicClient(['check:read']);
    const base = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'check:read',
      state: 's',
      code_challenge: 'x'.repeat(43),
      code_challenge_method: 'S256',
    };
    const ask = (params: Record<string, string>) =>
      fetch(`${server.issuer}/v1/oauth/authorize?${new URLSearchParams(params)}`, { redirect: 'manual' });
    for (const bad of [{ client_id: 'oc_nobodyxxxxxxxxxxxxx' }, { redirect_uri: 'https://evil.example/callback' }]) {
      const res = await ask({ ...base, ...bad });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(res.headers.get('content-type')).toContain('text/html');
      // A way back: a mistyped client id in the console's sign-in ends here.
      expect(await res.text()).toContain(`<a href="${server.issuer}/console/">Back to the grantd console</a>`);
    }
    for (const [bad, error] of [
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ scope: 'check:read admin' }, 'invalid_scope'],
    ] as const) {
      const res = await ask({ ...base, ...bad });
      expect(res.status).toBe(303);
      expect(new URL(res.headers.get('location')!).searchParams.get('error')).toBe(error);
    }
  });
});
