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
