import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, basic, form, useOAuthServer } from './support.ts';

// Failed client authentications on the token, revocation and introspection endpoints count against
// the caller's address like failed API keys on /v1 (docs/oauth.md): past the limit the address is
// answered 429 before any secret is compared.

const LIMIT = 3;
/** A window no test outlasts: the clock (Date's, which the limits count by) is moved past it by hand. */
const WINDOW_SECONDS = 60;
const server = useOAuthServer({ authFailureLimit: LIMIT, rateLimitWindow: WINDOW_SECONDS });
let tenant: TestTenant;
let client: { client_id: string; client_secret: string };

beforeAll(async () => {
  tenant = await newTenant(server.services);
  const res = await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', { name: 'svc', type: 'confidential', scopes: ['check:read'] });
  client = res.body as typeof client;
});

describe('failed authentications on the OAuth endpoints', () => {
  afterEach(() => vi.useRealTimers());

  it('are counted on each endpoint, and past the limit the address waits, whatever it sends', async () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    const wrong = basic(client.client_id, 'cs_wrong');
    const failures = [
      () => form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, wrong),
      () => form(server.issuer, '/v1/oauth/revoke', { token: 'x' }, wrong),
      () => form(server.issuer, '/v1/oauth/introspect', { token: 'x' }, wrong),
      () => form(server.issuer, '/v1/oauth/introspect', { token: 'x' }, 'Bearer gk_not_a_key'),
    ];
    for (const fail of failures) expect((await fail()).status).toBe(401);

    const good = () => form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, basic(client.client_id, client.client_secret));
    await expect.poll(async () => (await good()).status).toBe(429);
    const refused = await good();
    expect(refused.body).toMatchObject({ error: 'temporarily_unavailable', error_description: expect.stringContaining('failed authentications') });
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    const byQuery = await fetch(`${server.issuer}/v1/oauth/introspect?token=x`, { headers: { authorization: `Bearer ${tenant.adminKey}` } });
    expect(byQuery.status).toBe(429);

    // Once the wait is over, the right credentials are answered again.
    vi.setSystemTime(Date.now() + WINDOW_SECONDS * 1000);
    expect((await good()).status).toBe(200);
  });
});
