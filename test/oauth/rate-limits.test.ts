import { beforeAll, describe, expect, it } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, basic, form, useOAuthServer } from './support.ts';

// Rate limits apply per client as they do per key (docs/oauth.md): GRANTD_RATE_LIMIT counts a
// client's token requests under its client_id, the count its tokens take on /v1. A window of a
// minute keeps the counts from starting over during the test.

const LIMIT = 5;
const server = useOAuthServer({ rateLimit: LIMIT, rateLimitWindow: 60, authFailureLimit: 3 });
let tenant: TestTenant;

async function newClient() {
  const res = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', scopes: ['check:read'] });
  expect(res.status).toBe(201);
  return res.body as { client_id: string; client_secret: string };
}

const token = (client: { client_id: string; client_secret: string }) =>
  form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret));

beforeAll(async () => {
  tenant = await newTenant(server.services);
});

describe('the token endpoint', () => {
  it("limits each client's token requests, with its tokens' calls, and answers 429 as RFC 6749 errors are shaped", async () => {
    const [noisy, quiet] = [await newClient(), await newClient()];
    const first = await token(noisy);
    expect(first.status).toBe(200);
    const { access_token } = first.body as { access_token: string };
    for (let i = 1; i < LIMIT; i++) expect((await token(noisy)).status).toBe(200);

    const refused = await token(noisy);
    expect(refused).toMatchObject({ status: 429, body: { error: 'temporarily_unavailable', error_description: expect.any(String) } });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(refused.headers.get('pragma')).toBe('no-cache');
    expect(refused.headers.get('cache-control')).toBe('no-store');
    // One count per client, as per key: its tokens' calls are over the limit too.
    const check = await api(server.issuer, access_token, 'POST', '/v1/check', { subject: 'user:a', relation: 'viewer', object: 'doc:1' });
    expect(check).toMatchObject({ status: 429, body: { type: 'rate-limited' } });
    // Another client is not slowed.
    expect((await token(quiet)).status).toBe(200);
  });

  it('does not count a request with no client credentials at all as a failed authentication', async () => {
    const client = await newClient();
    for (let i = 0; i < 5; i++) {
      expect((await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' })).status).toBe(401);
    }
    expect((await token(client)).status).toBe(200);
  });
});
