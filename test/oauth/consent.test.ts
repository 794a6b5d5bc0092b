import { beforeAll, describe, expect, it } from 'vitest';
import { CSRF_COOKIE } from '../../src/http/oauth/consent.ts';
import { newTenant, type TestTenant } from '../helpers.ts';
import { authorizeQuery, consentPageOf, cookiesOf, newPublicClient, useOAuthServer } from './support.ts';

// The consent page's refusals (docs/oauth.md#authorization-code-and-the-consent-page), each shown
// with a form that would otherwise approve: the same page then approves with the right form.

const server = useOAuthServer();
const FAILURES = 2;
// The sign-in limit counts per address, here over a minute, on a server of its own so that the
// other tests' address is not shut out.
const limited = useOAuthServer({ authFailureLimit: FAILURES, rateLimitWindow: 60 });
let tenant: TestTenant;
let clientId: string;

beforeAll(async () => {
  tenant = await newTenant(server.services);
  clientId = await newPublicClient(server.issuer, tenant.adminKey);
});

type ConsentPage = Awaited<ReturnType<typeof consentPageOf>>;

const newPage = (issuer = server.issuer) => consentPageOf(issuer, authorizeQuery(clientId, 'check:read'));

/** Posts the consent form with these cookies and fields (approving with the admin key unless told otherwise). */
const submit = (page: ConsentPage, cookies: string[], fields: Record<string, string> = {}) =>
  fetch(page.url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies.join('; ') },
    body: new URLSearchParams({ csrf: page.csrf, decision: 'approve', api_key: tenant.adminKey, ...fields }).toString(),
  });

/** The page shown again (after a refused sign-in, say): its new form token and cookie; `html` when its body was read. */
async function shownAgain(page: ConsentPage, res: Response, html?: string): Promise<ConsentPage> {
  const csrf = /name="csrf" value="([^"]+)"/.exec(html ?? (await res.text()))![1]!;
  const fresh = cookiesOf(res);
  return { ...page, csrf, cookies: [...page.cookies.filter((pair) => !pair.startsWith(`${CSRF_COOKIE}=`)), ...fresh] };
}

async function expectForbidden(res: Response, says: string): Promise<string> {
  expect(res.status).toBe(403);
  expect(res.headers.get('location')).toBeNull();
  const html = await res.text();
  expect(html).toContain(says);
  return html;
}

const approves = async (res: Response) => {
  expect(res.status).toBe(303);
  expect(res.headers.get('location')).toContain('/v1/oauth/authorize/');
};

describe("the consent page's CSRF check", () => {
  it(`refuses a form sent without the ${CSRF_COOKIE} cookie`, async () => {
    const page = await newPage();
    const withoutCsrfCookie = page.cookies.filter((pair) => !pair.startsWith(`${CSRF_COOKIE}=`));
    expect(withoutCsrfCookie).toHaveLength(page.cookies.length - 1);
    await expectForbidden(await submit(page, withoutCsrfCookie), 'did not come from the consent page');
    await approves(await submit(page, page.cookies));
  });

  it("refuses a form whose token is another page load's", async () => {
    const first = await newPage();
    // The same page loaded again sets a cookie of its own: the first load's form no longer matches.
    const again = await fetch(first.url, { headers: { cookie: first.cookies.join('; ') } });
    const second = await shownAgain(first, again);
    expect(second.csrf).not.toBe(first.csrf);
    await expectForbidden(await submit(first, second.cookies), 'did not come from the consent page');
    await approves(await submit(second, second.cookies));
  });
});

describe('signing in on the consent page', () => {
  it("refuses another tenant's key, even an administrator's", async () => {
    const other = await newTenant(server.services);
    const page = await newPage();
    const refused = await submit(page, page.cookies, { api_key: other.adminKey });
    const next = await shownAgain(page, refused, await expectForbidden(refused, 'of another tenant'));
    await approves(await submit(next, next.cookies));
  });
});

describe('the sign-in limit (GRANTD_AUTH_FAILURE_LIMIT)', () => {
  it('refuses even the right key once the address has failed too often, and says when to try again', async () => {
    let page = await newPage(limited.issuer);
    for (let i = 0; i <= FAILURES; i++) {
      const refused = await submit(page, page.cookies, { api_key: `svc_${'x'.repeat(40)}` });
      expect(refused.status).toBe(403);
      page = await shownAgain(page, refused);
    }
    const html = await expectForbidden(await submit(page, page.cookies), 'Too many failed sign-ins from this address');
    expect(html).toMatch(/try again in \d+ s/);
  });
});
