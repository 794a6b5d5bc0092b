import { hash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { newTenant, type TestTenant } from '../helpers.ts';
import { approved, authorizeQuery, REDIRECT_URI, newPublicClient, useOAuthServer } from './support.ts';

// response_mode=form_post (advertised in the metadata): grantd's answer is a page whose one script
// posts the form to the client, under a policy that lets exactly that script run (docs/oauth.md#authorization-code-and-the-consent-page).

const server = useOAuthServer();
let tenant: TestTenant;
let clientId: string;

beforeAll(async () => {
  tenant = await newTenant(server.services);
  clientId = await newPublicClient(server.issuer, tenant.adminKey);
});

/** The directives of a Content-Security-Policy, by name. */
const directivesOf = (policy: string): Record<string, string[]> =>
  Object.fromEntries(
    policy
      .split(';')
      .map((directive) => directive.trim().split(/\s+/))
      .map(([name, ...values]) => [name!, values]),
  );

/** The page's inline scripts, each as the source expression of its SHA-256 that would admit it. */
const inlineScriptsOf = (html: string): string[] =>
  [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map(([, script]) => `'sha256-${hash('sha256', script!, 'base64')}'`);

/** The hidden fields of the page's form, and where it posts them. */
function formOf(html: string): { action: string; fields: Record<string, string> } {
  const action = /<form method="post" action="([^"]*)"/.exec(html)?.[1] ?? '';
  const fields = Object.fromEntries(
    [...html.matchAll(/<input type="hidden" name="([^"]*)" value="([^"]*)"/g)].map(([, name, value]) => [name!, value!]),
  );
  return { action, fields };
}

async function expectFormPostPage(res: Response, status: number): Promise<Record<string, string>> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  const policy = directivesOf(res.headers.get('content-security-policy') ?? '');
  // Exactly the page's own script may run: script-src names it and nothing else; nothing loads, nothing frames it.
  expect(inlineScriptsOf(html)).toHaveLength(1);
  expect(policy['script-src']).toEqual(inlineScriptsOf(html));
  expect(policy['default-src']).toEqual(["'none'"]);
  expect(policy['frame-ancestors']).toEqual(["'none'"]);
  const form = formOf(html);
  expect(form.action).toBe(REDIRECT_URI);
  return form.fields;
}

describe('response_mode=form_post', () => {
  it('is advertised', async () => {
    const metadata = (await (await fetch(`${server.issuer}/.well-known/oauth-authorization-server`)).json()) as Record<string, unknown>;
    expect(metadata.response_modes_supported).toContain('form_post');
  });

  it('answers an approval with a page that posts code, state and iss to the client, its script admitted by its policy', async () => {
    const res = await approved(server.issuer, tenant.adminKey, authorizeQuery(clientId, 'check:read', undefined, { response_mode: 'form_post' }));
    const fields = await expectFormPostPage(res, 200);
    expect(fields).toEqual({ code: expect.any(String), state: 'st', iss: server.issuer });
  });

  it('answers an error redirected to the client the same way', async () => {
    const query = authorizeQuery(clientId, 'check:read bogus', undefined, { response_mode: 'form_post' });
    const res = await fetch(`${server.issuer}/v1/oauth/authorize?${query}`, { redirect: 'manual' });
    const fields = await expectFormPostPage(res, 400);
    expect(fields).toMatchObject({ error: 'invalid_scope', state: 'st', iss: server.issuer });
  });
});
