import { beforeAll, describe, expect, it } from 'vitest';
import { createClient, ProblemError, type FetchLike, type GrantdClient } from '../../src/client/index.ts';
import { fetchedTokens } from '../../src/client/credentials.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { basic, form, useOAuthServer } from '../oauth/support.ts';
import { failure } from './support.ts';

// The client as an OAuth client (docs/oauth.md#client-credentials) and its wrappers for managing
// clients, against grantd on a socket.
const server = useOAuthServer();
let tenant: TestTenant;
let admin: GrantdClient;

/** A client that records each request's method, path and Authorization scheme. */
function recording(options: { clientId?: string; clientSecret?: string; accessToken?: string; scope?: string }) {
  const requests: string[] = [];
  const bearers: string[] = [];
  const fetchRecording: FetchLike = (input, init) => {
    const [scheme, credential] = (new Headers(init.headers).get('authorization') ?? '').split(' ');
    requests.push(`${init.method} ${new URL(input).pathname} ${scheme}`);
    if (scheme === 'Bearer') bearers.push(credential!);
    return fetch(input, init);
  };
  return { client: createClient({ ...options, baseUrl: server.issuer, fetch: fetchRecording }), requests, bearers };
}

const check = { subject: 'user:alice', relation: 'viewer', object: 'user:bob' };

beforeAll(async () => {
  tenant = await newTenant(server.services);
  admin = createClient({ apiKey: tenant.adminKey, baseUrl: server.issuer });
});

describe('the client as an OAuth client', () => {
  it('manages clients, fetches a token once, and renews it once after a 401', async () => {
    const created = await admin.oauth.clients.create({ name: 'Reports job', type: 'confidential', scopes: ['check:read', 'grant:read'] });
    expect(created.client_secret).toMatch(/^svc_cs_/);
    expect((await admin.oauth.clients.list()).clients.map((c) => c.client_id)).toContain(created.client_id);

    const { client, requests } = recording({ clientId: created.client_id, clientSecret: created.client_secret!, scope: 'check:read' });
    expect(await client.check(check)).toEqual({ allowed: false });
    expect(await client.check(check)).toEqual({ allowed: false });
    expect(requests).toEqual(['POST /v1/oauth/token Basic', 'POST /v1/check Bearer', 'POST /v1/check Bearer']);
    // The token carries the scope asked for, not the client's every scope.
    expect(await failure(() => client.grants.list())).toMatchObject({ error: { type: 'insufficient-scope', status: 403 } });

    // Revoked behind the client's back: the 401 leads to a new token and the call succeeds.
    const { access_token: revoked } = (
      await form(server.issuer, '/v1/oauth/token', { grant_type: 'client_credentials' }, basic(created.client_id, created.client_secret!))
    ).body as {
      access_token: string;
    };
    const sneaky = recording({ accessToken: revoked });
    expect(await sneaky.client.check(check)).toEqual({ allowed: false });
    expect((await form(server.issuer, '/v1/oauth/revoke', { token: revoked }, basic(created.client_id, created.client_secret!))).status).toBe(200);
    const { error } = await failure(() => sneaky.client.check(check));
    expect(error).toMatchObject({ type: 'unauthenticated', status: 401, attempts: 1 });

    requests.length = 0;
    await admin.oauth.clients.delete(created.client_id);
    const gone = await failure(() => client.check(check));
    // The deleted client's token is refused, and so is its request for a new one.
    expect(requests).toEqual(['POST /v1/check Bearer', 'POST /v1/oauth/token Basic']);
    expect(gone.error).toBeInstanceOf(ProblemError);
    expect(gone.error).toMatchObject({ type: 'invalid_client', status: 401 });
    expect(await failure(() => admin.oauth.clients.delete(created.client_id))).toMatchObject({ error: { type: 'client-not-found', status: 404 } });
  });

  it('sends the request once more with a new token after a 401', async () => {
    const created = await admin.oauth.clients.create({ name: 'Renewing job', type: 'confidential', scopes: ['check:read'] });
    const secret = created.client_secret!;
    const { client, requests, bearers } = recording({ clientId: created.client_id, clientSecret: secret });
    await client.check(check);
    // The client's token revoked behind its back: the next call is refused once, renews, and succeeds.
    expect((await form(server.issuer, '/v1/oauth/revoke', { token: bearers[0]! }, basic(created.client_id, secret))).status).toBe(200);
    requests.length = 0;
    expect(await client.check(check)).toEqual({ allowed: false });
    expect(requests).toEqual(['POST /v1/check Bearer', 'POST /v1/oauth/token Basic', 'POST /v1/check Bearer']);
    expect(bearers[2]).not.toBe(bearers[0]);
    expect(bearers[1]).toBe(bearers[0]);
  });

  it('rejects a wrong secret with the RFC 6749 code as the type, and options naming no or two credentials', async () => {
    const created = await admin.oauth.clients.create({ name: 'Wrong secret', type: 'confidential', scopes: ['check:read'] });
    const { client } = recording({ clientId: created.client_id, clientSecret: 'svc_cs_wrong' });
    expect(await failure(() => client.check(check))).toMatchObject({ error: { type: 'invalid_client', status: 401 } });
    expect(() => createClient({ baseUrl: server.issuer })).toThrow(TypeError);
    expect(() => createClient({ apiKey: tenant.adminKey, clientId: created.client_id, clientSecret: 'x' })).toThrow(TypeError);
    expect(() => createClient({ clientId: created.client_id })).toThrow(TypeError);
  });
});

describe('fetched tokens', () => {
  it('are renewed a minute before they expire, and fetched once for concurrent calls', async () => {
    let now = 0;
    let fetches = 0;
    const tokens = fetchedTokens(
      async () => ({ access_token: `t${++fetches}`, expires_in: 3600 }),
      () => now,
    );
    expect(await Promise.all([tokens.authorization(), tokens.authorization()])).toEqual(['Bearer t1', 'Bearer t1']);
    now = 3_539_000;
    expect(await tokens.authorization()).toBe('Bearer t1');
    now = 3_540_000;
    expect(await tokens.authorization()).toBe('Bearer t2');
    expect(tokens.renew('Bearer t2')).toBe(true);
    expect(await tokens.authorization()).toBe('Bearer t3');
  });
});
