import { randomBytes } from 'node:crypto';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, authorizationCode, authorizeQuery, form, REDIRECT_URI, newPublicClient, useOAuthServer } from './support.ts';

// Codes and refresh tokens at the token endpoint (docs/oauth.md#tokens): single use under
// concurrency, each way a code is refused, and an access token's expiry, on a fake clock.

// Faster than people start authorizations (test/oauth/authorization-limits.test.ts).
const server = useOAuthServer({ authorizeLimit: 1_000_000 });
let tenant: TestTenant;
/** How many requests race for one code or refresh token. */
const RACERS = 8;

beforeAll(async () => {
  tenant = await newTenant(server.services);
});

afterEach(() => {
  vi.useRealTimers();
});

const publicClient = () => newPublicClient(server.issuer, tenant.adminKey, ['check:read', 'grant:read']);

interface Tokens {
  access_token: string;
  refresh_token: string;
}

const redeem = (clientId: string, code: string, verifier: string, redirectUri = REDIRECT_URI) =>
  form(server.issuer, '/v1/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    client_id: clientId,
  });

const refresh = (clientId: string, refreshToken: string) =>
  form(server.issuer, '/v1/oauth/token', { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });

async function tokensOf(clientId: string): Promise<Tokens> {
  const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'grant:read');
  const res = await redeem(clientId, code, verifier);
  expect(res.status).toBe(200);
  return res.body as unknown as Tokens;
}

const introspect = async (token: string) =>
  (await api(server.issuer, tenant.adminKey, 'GET', `/v1/oauth/introspect?token=${encodeURIComponent(token)}`)).body;
const namespacesStatus = async (accessToken: string) => (await api(server.issuer, accessToken, 'GET', '/v1/namespaces')).status;

/** Of simultaneous answers: exactly one 200, every other 400 invalid_grant; the winner's tokens. */
function oneWinner(answers: Awaited<ReturnType<typeof form>>[]): Tokens {
  const statuses = answers.map((answer) => answer.status).sort();
  expect(statuses).toEqual([200, ...Array<number>(RACERS - 1).fill(400)]);
  for (const lost of answers.filter((answer) => answer.status === 400)) expect(lost.body).toMatchObject({ error: 'invalid_grant' });
  return answers.find((answer) => answer.status === 200)!.body as unknown as Tokens;
}

/** Every token of the grant has ended: the access token on /v1 and at introspection, the refresh token at the token endpoint. */
async function expectEnded(clientId: string, tokens: Tokens): Promise<void> {
  expect(await namespacesStatus(tokens.access_token)).toBe(401);
  expect(await introspect(tokens.access_token)).toEqual({ active: false });
  expect(await introspect(tokens.refresh_token)).toEqual({ active: false });
  expect(await refresh(clientId, tokens.refresh_token)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
}

describe('single use under concurrency', () => {
  // A few rounds: which request wins, and how the others interleave with it, differs each time.
  it.each([1, 2, 3])(`redeems a code once of ${RACERS} simultaneous redemptions, and ends the grant (round %i)`, async () => {
    const clientId = await publicClient();
    const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'grant:read');
    const answers = await Promise.all(Array.from({ length: RACERS }, () => redeem(clientId, code, verifier)));
    await expectEnded(clientId, oneWinner(answers));
  });

  it.each([1, 2, 3])(`refreshes once of ${RACERS} simultaneous refreshes, and ends the grant (round %i)`, async () => {
    const clientId = await publicClient();
    const first = await tokensOf(clientId);
    const answers = await Promise.all(Array.from({ length: RACERS }, () => refresh(clientId, first.refresh_token)));
    const winner = oneWinner(answers);
    await expectEnded(clientId, winner);
    await expectEnded(clientId, first);
  });
});

describe('a code at the token endpoint', () => {
  it('is refused with invalid_grant for a wrong PKCE verifier, another redirect_uri and another client, and stays good for its own', async () => {
    const [clientId, otherClientId] = [await publicClient(), await publicClient()];
    const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'grant:read');
    const refusals = {
      'a wrong verifier': await redeem(clientId, code, randomBytes(32).toString('base64url')),
      'another redirect_uri': await redeem(clientId, code, verifier, `${REDIRECT_URI}/other`),
      'another client': await redeem(otherClientId, code, verifier),
    };
    for (const [what, refused] of Object.entries(refusals)) expect(refused, what).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
    // Refused, the code was not used up: its own client redeems it as it was asked for.
    expect((await redeem(clientId, code, verifier)).status).toBe(200);
  });

  it('is never issued without a code_challenge: the authorization request is refused, back at the client', async () => {
    const clientId = await publicClient();
    const query = authorizeQuery(clientId, 'grant:read');
    query.delete('code_challenge');
    query.delete('code_challenge_method');
    const res = await fetch(`${server.issuer}/v1/oauth/authorize?${query}`, { redirect: 'manual' });
    expect(res.status).toBe(303);
    const back = new URL(res.headers.get('location')!);
    expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
    expect(Object.fromEntries(back.searchParams)).toMatchObject({ error: 'invalid_request', state: 'st' });
    expect(back.searchParams.get('error_description')).toMatch(/PKCE/);
  });

  it('is refused with invalid_grant past its 60 s, on a fake clock', async () => {
    const clientId = await publicClient();
    const { code, verifier } = await authorizationCode(server.issuer, tenant.adminKey, clientId, 'grant:read');
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 61_000 });
    expect(await redeem(clientId, code, verifier)).toMatchObject({ status: 400, body: { error: 'invalid_grant' } });
  });
});

describe('an access token past its lifetime (GRANTD_OAUTH_ACCESS_TTL), on a fake clock', () => {
  it('is 401 on /v1 and inactive at introspection, while its refresh token still gets a new one', async () => {
    const clientId = await publicClient();
    const tokens = await tokensOf(clientId);
    expect(await namespacesStatus(tokens.access_token)).toBe(200);
    expect(await introspect(tokens.access_token)).toMatchObject({ active: true });

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 3_600_000 + 1_000 });
    expect(await namespacesStatus(tokens.access_token)).toBe(401);
    expect(await introspect(tokens.access_token)).toEqual({ active: false });
    const renewed = await refresh(clientId, tokens.refresh_token);
    expect(renewed.status).toBe(200);
    const { access_token } = renewed.body as unknown as Tokens;
    expect(await namespacesStatus(access_token)).toBe(200);
    expect(await introspect(access_token)).toMatchObject({ active: true, client_id: clientId });
  });
});
