// The token requests of a public OAuth client (a browser app such as grantd's console): it holds no
// secret, so it names itself by client_id in the form. Web APIs only, like the rest of the client.
import { initClient, type ClientInferResponseBody } from '@ts-rest/core';
import type { z } from 'zod';
import { contract, type TokenRequestSchema } from '../../contract/index.ts';
import { noCredentials } from './credentials.ts';
import { createTransport, defaultSleep, DEFAULT_RETRY, DEFAULT_TIMEOUT_MS, type FetchLike } from './transport.ts';

/** What the token endpoint answers: an access token, its lifetime and scopes, and the next refresh token. */
export type TokenSet = ClientInferResponseBody<typeof contract.oauth.token, 200>;

type TokenRequest = z.input<typeof TokenRequestSchema>;

export interface PublicClientOptions {
  /** The public client's id (`oc_...`). */
  clientId: string;
  /** Where grantd listens, without `/v1`. */
  baseUrl: string;
  /** Time budget of each call in ms (default 5000). */
  timeoutMs?: number;
  /** The fetch to use (default: the global `fetch`). */
  fetch?: FetchLike;
}

export interface PublicOAuthClient {
  /** Trades the code the redirect carried, with the PKCE verifier, for tokens (RFC 6749 4.1.3, RFC 7636). */
  exchangeCode(input: { code: string; redirectUri: string; codeVerifier: string }): Promise<TokenSet>;
  /** Trades the latest refresh token for new tokens; the old one is spent. */
  refresh(refreshToken: string): Promise<TokenSet>;
  /** RFC 7009: ends the token (a refresh token ends its whole grant). */
  revoke(token: string, hint: 'access_token' | 'refresh_token'): Promise<void>;
}

/**
 * Token requests are never retried: a code and a refresh token are single use, and presenting one
 * again revokes the whole grant. Errors reject as ProblemErrors whose `type` is the RFC 6749 code.
 */
export function createPublicOAuthClient(options: PublicClientOptions): PublicOAuthClient {
  const { clientId } = options;
  const givenFetch = options.fetch;
  const raw = initClient(contract, {
    baseUrl: new URL(options.baseUrl).toString().replace(/\/+$/, ''),
    baseHeaders: { accept: 'application/json' },
    api: createTransport({
      credentials: noCredentials,
      fetch: () => givenFetch ?? ((input, init) => fetch(input, init)),
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      retry: DEFAULT_RETRY,
      sleep: defaultSleep,
      random: Math.random,
      isIdempotent: () => false,
    }),
    validateResponse: false,
    throwOnUnknownStatus: false,
  });
  const token = async (body: TokenRequest): Promise<TokenSet> => (await raw.oauth.token({ body: { ...body, client_id: clientId } })).body as TokenSet;
  return {
    exchangeCode: ({ code, redirectUri, codeVerifier }) =>
      token({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: codeVerifier }),
    refresh: (refreshToken) => token({ grant_type: 'refresh_token', refresh_token: refreshToken }),
    revoke: async (value, hint) => {
      await raw.oauth.revoke({ body: { token: value, token_type_hint: hint, client_id: clientId } });
    },
  };
}
