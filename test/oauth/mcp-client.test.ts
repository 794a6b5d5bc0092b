import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import type { BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../console/chromium.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, useOAuthServer } from './support.ts';

// An MCP client as one is built on the SDK (docs/mcp.md), given nothing but `<base>/mcp`: it
// discovers the authorization server from the 401 (RFC 9728), registers itself (RFC 7591), sends its
// user through the consent page (driven here in Debian's Chromium), redeems the code with PKCE and
// `resource` (RFC 8707), then lists the tools and calls write_grants and check.

/** A loopback redirect URI (RFC 8252), as a desktop MCP client registers; the browser's visit is caught before it leaves. */
const REDIRECT_URI = 'http://127.0.0.1:33418/callback';

const server = useOAuthServer();
let tenant: TestTenant;
let context: BrowserContext;
let userDataDir: string;

beforeAll(async () => {
  tenant = await newTenant(server.services);
  userDataDir = mkdtempSync(join(tmpdir(), 'grantd-mcp-chromium-'));
  context = await launchChromium(userDataDir);
});

afterAll(async () => {
  await context?.close();
  if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
});

/** What an MCP host keeps for one server: its registration, tokens and verifier; the user's browser approves with `key`. */
class BrowserSignIn implements OAuthClientProvider {
  client: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  /** The code the browser came back with. */
  code: Promise<string> | undefined;
  authorizationUrl: URL | undefined;

  constructor(private readonly key: string) {}

  get redirectUrl(): string {
    return REDIRECT_URI;
  }

  get clientMetadata(): OAuthClientMetadata {
    return {
      client_name: 'sdk-test-host',
      redirect_uris: [REDIRECT_URI],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    };
  }

  clientInformation() {
    return this.client;
  }

  saveClientInformation(information: OAuthClientInformationMixed) {
    this.client = information;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }

  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
    this.code = this.approve(url);
  }

  private async approve(url: URL): Promise<string> {
    const page = await context.newPage();
    try {
      let back: URL | undefined;
      await page.route(`${REDIRECT_URI}**`, (route) => {
        back = new URL(route.request().url());
        return route.fulfill({ status: 200, body: 'back at the MCP host' });
      });
      await page.goto(url.href);
      await page.waitForURL(/\/v1\/oauth\/consent\//);
      await page.fill('#api_key', this.key);
      await page.click('button:has-text("Approve")');
      await expect.poll(() => back, { timeout: 10_000 }).toBeDefined();
      const code = back!.searchParams.get('code');
      expect(code, `the browser came back to ${back!.href}`).not.toBeNull();
      return code!;
    } finally {
      await page.close();
    }
  }
}

describe('an MCP client on the SDK, given only the server URL', () => {
  it('discovers, registers, signs in through the consent page, and calls write_grants and check', async () => {
    const mcpUrl = new URL(`${server.issuer}/mcp`);
    const ns = 'doc';
    expect((await api(server.issuer, tenant.adminKey, 'POST', '/v1/namespaces', { name: ns, relations: { viewer: {} } })).status).toBe(201);

    const signIn = new BrowserSignIn(tenant.adminKey);
    const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: signIn });
    await expect(new Client({ name: 'sdk-test-host', version: '1.0.0' }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
    // It registered itself, and asked for the MCP endpoint's resource and scopes.
    expect(signIn.client?.client_id).toBeTruthy();
    expect(signIn.authorizationUrl?.searchParams.get('resource')).toBe(mcpUrl.href);
    expect(signIn.authorizationUrl?.searchParams.get('code_challenge_method')).toBe('S256');
    await first.finishAuth(await signIn.code!);
    expect(signIn.saved?.access_token).toMatch(/^svc_at_/);

    const client = new Client({ name: 'sdk-test-host', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: signIn }));
    try {
      const { tools } = await client.listTools();
      expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['check', 'write_grants']));
      const written = await client.callTool({
        name: 'write_grants',
        arguments: { writes: [{ subject: 'user:ada', relation: 'viewer', object: `${ns}:readme` }] },
      });
      expect(written.isError, JSON.stringify(written)).toBeFalsy();
      const allowed = await client.callTool({ name: 'check', arguments: { subject: 'user:ada', relation: 'viewer', object: `${ns}:readme` } });
      expect(allowed.structuredContent).toEqual({ allowed: true });
      const denied = await client.callTool({ name: 'check', arguments: { subject: 'user:bob', relation: 'viewer', object: `${ns}:readme` } });
      expect(denied.structuredContent).toEqual({ allowed: false });
    } finally {
      await client.close();
    }

    // The token is for the MCP endpoint only (RFC 8707): /v1 refuses it.
    const onApi = await api(server.issuer, signIn.saved!.access_token, 'GET', '/v1/namespaces');
    expect(onApi.status).toBe(401);
  }, 60_000);
});
