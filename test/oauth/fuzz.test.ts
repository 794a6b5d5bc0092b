import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { contract, OAUTH_ERRORS } from '../../contract/index.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { CSRF_COOKIE } from '../../src/http/oauth/consent.ts';
import { api, authorizeQuery, basic, consentPageOf, newPublicClient, useOAuthServer } from './support.ts';

/**
 * Hostile forms on the OAuth routes that take them (docs/oauth.md#endpoints): never a 5xx, only a
 * status the contract declares, and every error an RFC 6749 body with a known code.
 */
// The fuzz fails client authentication on purpose, dozens of times a second: the failed-authentication
// limit (test/oauth/failed-authentications.test.ts) would otherwise shut the next test's browser out.
// It starts an authorization a run, faster than people do (test/oauth/authorization-limits.test.ts).
const server = useOAuthServer({ authFailureLimit: 1_000_000, authorizeLimit: 1_000_000 });
let tenant: TestTenant;
let client: { client_id: string; client_secret: string };
let keyWithoutCheckRead: string;

beforeAll(async () => {
  tenant = await newTenant(server.services);
  keyWithoutCheckRead = await tenant.keyWith('grant:write');
  client = (await api(server.issuer, tenant.adminKey, 'POST', '/v1/oauth/clients', { name: 'Fuzzed', type: 'confidential', scopes: ['check:read'] }))
    .body as typeof client;
});

const nasty = fc.oneof(
  fc.string(),
  fc.string({ unit: 'binary' }),
  fc.constantFrom(
    '',
    'client_credentials',
    'authorization_code',
    'refresh_token',
    'password',
    'check:read',
    'admin',
    'svc_at_x',
    'svc_rt_x',
    '__proto__',
    'a\u0000b',
    '\ud800',
    'x'.repeat(5000),
  ),
);
const FIELDS = [
  'grant_type',
  'scope',
  'code',
  'redirect_uri',
  'code_verifier',
  'refresh_token',
  'client_id',
  'client_secret',
  'token',
  'token_type_hint',
  '__proto__',
];
const fields = fc.array(fc.tuple(fc.constantFrom(...FIELDS), nasty), { maxLength: 8 });
const body = fc.oneof(
  { weight: 4, arbitrary: fields.map((pairs) => new URLSearchParams(pairs).toString()) },
  { weight: 1, arbitrary: fc.oneof(fc.string(), fc.constantFrom('%', '%zz', '=&=&', 'a=%ff%fe', '{"grant_type": "client_credentials"}')) },
);
const contentType = fc.constantFrom(
  'application/x-www-form-urlencoded',
  'application/x-www-form-urlencoded; charset=latin1',
  'application/json',
  'text/plain',
  'multipart/form-data; boundary=x',
  '',
);
const authorization = fc.constantFrom<() => string | undefined>(
  () => undefined,
  () => basic(client.client_id, client.client_secret),
  () => basic(client.client_id, 'svc_cs_wrong'),
  () => 'Basic %%%',
  () => `Bearer ${tenant.adminKey}`,
  () => `Bearer ${keyWithoutCheckRead}`,
  () => 'Bearer svc_at_nothing',
);

const FORM_ROUTES = [contract.oauth.token, contract.oauth.revoke, contract.oauth.introspect];

describe.each(FORM_ROUTES.map((route) => [route.path, route] as const))('fuzzing POST %s', (_path, route) => {
  it('never answers 5xx, answers only declared statuses, and every error as RFC 6749 does', async () => {
    await fc.assert(
      fc.asyncProperty(body, contentType, authorization, async (payload, type, credential) => {
        const sent = credential();
        const res = await fetch(`${server.issuer}${route.path}`, {
          method: 'POST',
          headers: { ...(type ? { 'content-type': type } : {}), ...(sent ? { authorization: sent } : {}) },
          body: payload,
        });
        const text = await res.text();
        const where = `${route.path} ${type} ${payload.slice(0, 200)}: ${res.status} ${text.slice(0, 200)}`;
        expect(res.status, where).toBeLessThan(500);
        expect(Object.keys(route.responses), where).toContain(String(res.status));
        // A refusal is RFC 6749's JSON error, of a code the routes document.
        const refused = res.status >= 400;
        const refusal = refused && {
          json: (res.headers.get('content-type') ?? '').startsWith('application/json'),
          documentedError: (OAUTH_ERRORS as readonly string[]).includes((JSON.parse(text) as { error: string }).error),
        };
        expect(refusal, where).toEqual(refused && { json: true, documentedError: true });
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});

describe('fuzzing POST /v1/oauth/consent/:uid', () => {
  let publicClientId: string;
  beforeAll(async () => {
    publicClientId = await newPublicClient(server.issuer, tenant.adminKey, ['check:read'], 'Fuzzed app');
  });

  // Weighted towards the well-formed, so that runs get past each check in turn, up to approvals.
  const usually = <T>(likely: fc.Arbitrary<T>, otherwise: fc.Arbitrary<T>) =>
    fc.oneof({ weight: 3, arbitrary: likely }, { weight: 1, arbitrary: otherwise });
  const form = fc.record({
    decision: fc.option(usually(fc.constantFrom('approve', 'deny'), nasty), { nil: undefined }),
    api_key: fc.option(
      usually(
        fc.constant(() => tenant.adminKey),
        nasty.map((value) => () => value),
      ),
      { nil: undefined },
    ),
    csrf: usually(fc.constant(true), fc.constant(false)),
    extra: fc.array(fc.tuple(fc.constantFrom('__proto__', 'uid', 'scope', 'decision'), nasty), { maxLength: 3 }),
  });
  const cookieSets = usually(fc.constant('all'), fc.constantFrom('none', 'no-csrf-cookie'));
  const ownUid = usually(fc.constant(true), fc.constant(false));
  const route = contract.oauth.decide;

  it('never answers 5xx, and answers only what the contract declares: a redirect or an HTML page', async () => {
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(form, cookieSets, ownUid, async (sent, cookies, sameUid) => {
        const page = await consentPageOf(server.issuer, authorizeQuery(publicClientId, 'check:read'));
        const pairs: [string, string][] = [...sent.extra];
        if (sent.decision !== undefined) pairs.push(['decision', sent.decision]);
        if (sent.api_key !== undefined) pairs.push(['api_key', sent.api_key()]);
        if (sent.csrf) pairs.push(['csrf', page.csrf]);
        const kept = cookies === 'all' ? page.cookies : cookies === 'none' ? [] : page.cookies.filter((pair) => !pair.startsWith(`${CSRF_COOKIE}=`));
        const cookie = kept.join('; ');
        const path = sameUid ? new URL(page.url).pathname : `${route.path.replace(':uid', 'x'.repeat(21))}`;
        const res = await fetch(`${server.issuer}${path}`, {
          method: 'POST',
          redirect: 'manual',
          headers: { 'content-type': 'application/x-www-form-urlencoded', ...(cookie ? { cookie } : {}) },
          body: new URLSearchParams(pairs).toString(),
        });
        const where = `${path} ${cookies} ${JSON.stringify(pairs).slice(0, 300)}: ${res.status}`;
        expect(res.status, where).toBeLessThan(500);
        expect(Object.keys(route.responses), where).toContain(String(res.status));
        // A form without the page's token, or without the cookie it must match, goes no further.
        expect(res.status !== 403 && (!sent.csrf || cookies !== 'all'), where).toBe(false);
        // A refusal is a page.
        const refused = res.status >= 400;
        expect(refused && (res.headers.get('content-type') ?? '').startsWith('text/html'), where).toBe(refused);
        seen.add(res.status);
        await res.body?.cancel();
      }),
      { numRuns: 40 },
    );
    // The runs reached a decision, a refusal and a bad request.
    expect([...seen].sort()).toEqual(expect.arrayContaining([303, 400, 403]));
  }, 180_000);
});
