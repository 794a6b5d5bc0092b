import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { AUTHORIZE_PARAMETER_MAX_LENGTH, PENDING_CONSENTS_PER_CLIENT } from '../../contract/index.ts';
import { PAGE_CSP } from '../../src/auth/oauth/pages.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { authorizeQuery, REDIRECT_URI, newPublicClient, useOAuthServer } from './support.ts';

// An authorization request is stored until the person decides (docs/oauth.md#limits-of-authorization-requests):
// rate limited per client and per address, at most PENDING_CONSENTS_PER_CLIENT pending per client,
// and no parameter longer than AUTHORIZE_PARAMETER_MAX_LENGTH.

const LIMIT = 3;
// A window of a minute keeps the counts from starting over during a test; X-Forwarded-For names the address.
const limited = useOAuthServer({ authorizeLimit: LIMIT, rateLimitWindow: 60, trustProxy: 1 });
const unlimited = useOAuthServer({ authorizeLimit: 1_000_000 });
let tenant: TestTenant;

beforeAll(async () => {
  tenant = await newTenant(limited.services);
});

afterEach(() => {
  vi.useRealTimers();
});

const publicClient = () => newPublicClient(limited.issuer, tenant.adminKey);

const authorize = (issuer: string, clientId: string, { from, ...extra }: Record<string, string> = {}) =>
  fetch(`${issuer}/v1/oauth/authorize?${authorizeQuery(clientId, 'check:read', undefined, extra)}`, {
    redirect: 'manual',
    headers: from ? { 'x-forwarded-for': from } : {},
  });

const pendingOf = (clientId: string) =>
  limited.services.db.oAuthRecord.count({ where: { kind: 'Interaction', clientId, expiresAt: { gt: new Date() } } });

/** A 429 page with Retry-After: not a redirect, nothing stored. */
async function expectRefusedPage(res: Response): Promise<void> {
  expect(res.status).toBe(429);
  expect(res.headers.get('location')).toBeNull();
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  expect(res.headers.get('content-security-policy')).toBe(PAGE_CSP);
  expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  expect(await res.text()).toContain('temporarily_unavailable');
}

const toConsentPage = (res: Response) => {
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toContain('/v1/oauth/consent/');
};

describe('the rate limits of GET /v1/oauth/authorize (GRANTD_AUTHORIZE_LIMIT)', () => {
  it('limits each client address, whichever clients it asks for', async () => {
    const clients = [await publicClient(), await publicClient(), await publicClient(), await publicClient()];
    for (const clientId of clients.slice(0, LIMIT)) toConsentPage(await authorize(limited.issuer, clientId, { from: '10.0.1.1' }));
    const refused = await authorize(limited.issuer, clients[LIMIT]!, { from: '10.0.1.1' });
    await expectRefusedPage(refused);
    expect(await pendingOf(clients[LIMIT]!)).toBe(0);
    // Another address is not slowed.
    toConsentPage(await authorize(limited.issuer, clients[LIMIT]!, { from: '10.0.1.2' }));
  });

  it('limits each client, from whichever addresses it is asked for', async () => {
    const [busy, quiet] = [await publicClient(), await publicClient()];
    for (let i = 0; i < LIMIT; i++) toConsentPage(await authorize(limited.issuer, busy, { from: `10.0.2.${i}` }));
    await expectRefusedPage(await authorize(limited.issuer, busy, { from: '10.0.2.100' }));
    expect(await pendingOf(busy)).toBe(LIMIT);
    // Another client is not slowed.
    toConsentPage(await authorize(limited.issuer, quiet, { from: '10.0.2.101' }));
  });
});

describe('the consents a client may have pending', () => {
  it(`are at most ${PENDING_CONSENTS_PER_CLIENT}, even asked for all at once; one more is possible once the oldest expires`, async () => {
    const [clientId, other] = [await publicClient(), await publicClient()];
    const answers = await Promise.all(Array.from({ length: PENDING_CONSENTS_PER_CLIENT + 20 }, () => authorize(unlimited.issuer, clientId)));
    const statuses = answers.map((res) => res.status);
    expect(statuses.filter((status) => status === 303)).toHaveLength(PENDING_CONSENTS_PER_CLIENT);
    expect(statuses.filter((status) => status === 429)).toHaveLength(20);
    const refused = answers.find((res) => res.status === 429)!;
    await expectRefusedPage(refused);
    // Until the oldest pending consent expires, 10 minutes after it was asked for.
    expect(Number(refused.headers.get('retry-after'))).toBeLessThanOrEqual(600);
    expect(await pendingOf(clientId)).toBe(PENDING_CONSENTS_PER_CLIENT);
    // Another client is not held back.
    toConsentPage(await authorize(unlimited.issuer, other));

    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 601_000 });
    toConsentPage(await authorize(unlimited.issuer, clientId));
  });
});

describe('a parameter of an authorization request', () => {
  it(`is refused past ${AUTHORIZE_PARAMETER_MAX_LENGTH} characters with invalid_request, redirected to the client, storing nothing`, async () => {
    const clientId = await publicClient();
    toConsentPage(await authorize(unlimited.issuer, clientId, { state: 's'.repeat(AUTHORIZE_PARAMETER_MAX_LENGTH) }));
    for (const parameter of ['state', 'login_hint', 'ui_locales']) {
      const res = await authorize(unlimited.issuer, clientId, { [parameter]: 'x'.repeat(AUTHORIZE_PARAMETER_MAX_LENGTH + 1) });
      expect(res.status, parameter).toBe(303);
      const back = new URL(res.headers.get('location')!);
      expect(`${back.origin}${back.pathname}`).toBe(REDIRECT_URI);
      expect(back.searchParams.get('error'), parameter).toBe('invalid_request');
      expect(back.searchParams.get('error_description'), parameter).toBe(`${parameter} is longer than ${AUTHORIZE_PARAMETER_MAX_LENGTH} characters`);
    }
    expect(await pendingOf(clientId)).toBe(1);
  });
});
