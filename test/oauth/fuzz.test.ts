import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { contract, OAUTH_ERRORS } from '../../contract/index.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { api, basic, useOAuthServer } from './support.ts';

/**
 * Hostile forms on the OAuth routes that take them (docs/oauth.md#endpoints): never a 5xx, only a
 * status the contract declares, and every error an RFC 6749 body with a known code.
 */
const server = useOAuthServer();
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
        if (res.status >= 400) {
          expect(res.headers.get('content-type'), where).toMatch(/^application\/json/);
          expect(OAUTH_ERRORS, where).toContain((JSON.parse(text) as { error: string }).error);
        }
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
