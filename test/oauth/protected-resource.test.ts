import express from 'express';
import * as oauth4 from 'oauth4webapi';
import supertest from 'supertest';
import { describe, expect, it } from 'vitest';
import { KEY_SCOPES } from '../../contract/index.ts';
import { authentication } from '../../src/http/middleware/authenticate.ts';
import { api, useOAuthServer } from './support.ts';

// RFC 9728: the three protected-resource documents (docs/oauth.md#protected-resources), found by
// a client's strict discovery, and the 401 naming the document of the resource that was called.

const server = useOAuthServer();
const insecure = { [oauth4.allowInsecureRequests]: true };

describe('protected-resource metadata (RFC 9728)', () => {
  it.each([
    ['', KEY_SCOPES],
    ['/v1', KEY_SCOPES],
    ['/mcp', ['check:read', 'grant:read', 'grant:write']],
  ])('describes resource <issuer>%s where strict discovery looks for it, readable from any origin', async (path, scopes) => {
    const resource = new URL(`${server.issuer}${path}`);
    const response = await oauth4.resourceDiscoveryRequest(resource, insecure);
    expect(response.headers.get('access-control-allow-origin')).toBe('*');
    const metadata = await oauth4.processResourceDiscoveryResponse(resource, response);
    expect(metadata).toMatchObject({
      resource: `${server.issuer}${path}`,
      authorization_servers: [server.issuer],
      scopes_supported: [...scopes],
      bearer_methods_supported: ['header'],
    });
  });

  it('answers a browser preflight for the documents', async () => {
    const res = await fetch(`${server.issuer}/.well-known/oauth-protected-resource/mcp`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'mcp-protocol-version' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toBe('GET');
  });

  it("a 401 from /v1 names the API's document, with or without a bad token", async () => {
    const metadata = `resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/v1"`;
    const none = await fetch(`${server.issuer}/v1/namespaces`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="grantd", ${metadata}`);
    const bad = await api(server.issuer, 'gk_unknown', 'GET', '/v1/namespaces');
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toBe(`Bearer realm="grantd", ${metadata}, error="invalid_token"`);
  });

  it("a 401 under /mcp names the MCP endpoint's document: the resource is decided by the path", async () => {
    const { services } = server;
    const { authenticate } = authentication(services.keys, services.freshness, services.limits.authFailures, server.issuer);
    const app = express().use('/mcp', authenticate as express.RequestHandler);
    const res = await supertest(app).post('/mcp');
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(
      `Bearer realm="grantd", resource_metadata="${server.issuer}/.well-known/oauth-protected-resource/mcp"`,
    );
  });
});
