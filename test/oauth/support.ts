import { createHash, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as oauth from 'openid-client';
import { afterAll, beforeAll } from 'vitest';
import { createApp } from '../../src/http/app.ts';
import { DEFAULT_HTTP_OPTIONS } from '../../src/http/options.ts';
import { useServices } from '../helpers.ts';

/**
 * grantd on a socket whose issuer is its own address (as GRANTD_PUBLIC_URL would say), for OAuth
 * clients that check the issuer of the metadata they discover.
 */
export function useOAuthServer(options: Parameters<typeof useServices>[0] = {}) {
  const services = useServices(options);
  const state = { issuer: '', services };
  const server = createServer();
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    state.issuer = `http://localhost:${(server.address() as AddressInfo).port}`;
    server.on('request', createApp(services, { ...DEFAULT_HTTP_OPTIONS, publicUrl: state.issuer }));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  return state;
}

/** openid-client's configuration of a client, by discovery (RFC 8414) over plain HTTP. */
export function discover(issuer: string, clientId: string, secret?: string): Promise<oauth.Configuration> {
  return oauth.discovery(new URL(issuer), clientId, secret, secret === undefined ? oauth.None() : oauth.ClientSecretBasic(secret), {
    execute: [oauth.allowInsecureRequests],
    algorithm: 'oauth2',
  });
}

/** Calls grantd's API with a bearer key or token. */
export async function api(issuer: string, token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${issuer}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/** Posts a form, as OAuth clients do. */
export async function form(issuer: string, path: string, fields: Record<string, string>, authorization?: string) {
  const res = await fetch(`${issuer}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization ? { authorization } : {}) },
    body: new URLSearchParams(fields).toString(),
  });
  const text = await res.text();
  let body: Record<string, unknown> | string = text;
  try {
    body = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // an HTML page
  }
  return { status: res.status, headers: res.headers, body };
}

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

export const REDIRECT_URI = 'https://app.example/callback';

/** A public client of the tenant (made with its admin key), redirecting to REDIRECT_URI; its client_id. */
export async function newPublicClient(issuer: string, adminKey: string, scopes: string[] = ['check:read'], name = 'Notes app'): Promise<string> {
  const res = await api(issuer, adminKey, 'POST', '/v1/oauth/clients', { name, type: 'public', scopes, redirect_uris: [REDIRECT_URI] });
  if (res.status !== 201) throw new Error(`a public client was not made: ${res.status} ${JSON.stringify(res.body)}`);
  return (res.body as { client_id: string }).client_id;
}

/** The query of an authorization request for a client's code, with PKCE (S256) from `verifier`. */
export function authorizeQuery(
  clientId: string,
  scope: string,
  verifier = randomBytes(32).toString('base64url'),
  extra: Record<string, string> = {},
) {
  return new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope,
    state: 'st',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    ...extra,
  });
}

/** The cookies a browser would keep from an answer, as a `cookie` header's pairs. */
export const cookiesOf = (res: Response): string[] => res.headers.getSetCookie().map((cookie) => cookie.split(';')[0]!);

/** An authorization request up to its consent page, without a browser: the page's URL, the browser's cookies, and the form's CSRF token. */
export async function consentPageOf(issuer: string, query: URLSearchParams): Promise<{ url: string; cookies: string[]; csrf: string }> {
  const started = await fetch(`${issuer}/v1/oauth/authorize?${query}`, { redirect: 'manual' });
  const url = started.headers.get('location')!;
  const page = await fetch(url, { headers: { cookie: cookiesOf(started).join('; ') } });
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  return { url, cookies: [...cookiesOf(started), ...cookiesOf(page)], csrf };
}

/**
 * An authorization request approved on the consent page with `key`, without a browser: grantd's
 * last answer, a redirect to the client (or, with response_mode=form_post, the page that posts to it).
 */
export async function approved(issuer: string, key: string, query: URLSearchParams): Promise<Response> {
  const page = await consentPageOf(issuer, query);
  let cookies = page.cookies;
  let res = await fetch(page.url, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookies.join('; ') },
    body: new URLSearchParams({ csrf: page.csrf, decision: 'approve', api_key: key }).toString(),
  });
  // Followed while grantd redirects to itself.
  const ours = (location: string | null) => location !== null && new URL(location, issuer).origin === new URL(issuer).origin;
  while (ours(res.headers.get('location'))) {
    cookies = [...cookies, ...cookiesOf(res)];
    res = await fetch(new URL(res.headers.get('location')!, issuer), { redirect: 'manual', headers: { cookie: cookies.join('; ') } });
  }
  return res;
}

/** The authorization code flow without a browser, approved with `key`, up to the code and the PKCE verifier it is redeemed with. */
export async function authorizationCode(issuer: string, key: string, clientId: string, scope: string): Promise<{ code: string; verifier: string }> {
  const verifier = randomBytes(32).toString('base64url');
  const back = await approved(issuer, key, authorizeQuery(clientId, scope, verifier));
  return { code: new URL(back.headers.get('location')!).searchParams.get('code')!, verifier };
}
