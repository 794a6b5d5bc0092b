// Where the client's Authorization header comes from: an API key or an access token as given, or
// tokens it fetches itself by client_credentials. Web APIs only (btoa), for edge runtimes.

/** The Authorization header of each request, and whether a refused one may be replaced. */
export interface Credentials {
  /** The header's value for the next request; undefined sends none (a public client proves only its id, in the form). */
  authorization(): Promise<string | undefined>;
  /** After a 401 to `sent`: true when asking `authorization()` again may give a header that works. */
  renew(sent: string): boolean;
}

/** A bearer secret used as is (an API key or an access token): a 401 is final. */
export function bearer(secret: string): Credentials {
  const value = `Bearer ${secret}`;
  return { authorization: async () => value, renew: () => false };
}

/** No Authorization header: the token requests of a public OAuth client, which carry its client_id in the form. */
export const noCredentials: Credentials = { authorization: async () => undefined, renew: () => false };

/** HTTP Basic for an OAuth client (RFC 6749 2.3.1: id and secret form-encoded first). */
export const clientBasic = (clientId: string, clientSecret: string): string =>
  `Basic ${btoa(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`)}`;

export interface Token {
  access_token: string;
  expires_in: number;
}

/** How long before its expiry a token is renewed: a minute, or half the lifetime of a short one. */
const renewEarlyMs = (lifetimeMs: number): number => Math.min(60_000, lifetimeMs / 2);

/**
 * Tokens fetched with `fetchToken` when first needed, again shortly before they expire, and again
 * after a 401 (the token was revoked, or its client's grant ended). Concurrent calls share one fetch.
 */
export function fetchedTokens(fetchToken: () => Promise<Token>, now: () => number = Date.now): Credentials {
  let current: { value: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;
  const fetchNew = async (): Promise<string> => {
    const token = await fetchToken();
    const lifetimeMs = token.expires_in * 1000;
    current = { value: `Bearer ${token.access_token}`, renewAt: now() + lifetimeMs - renewEarlyMs(lifetimeMs) };
    return current.value;
  };
  return {
    authorization: () => {
      if (current && now() < current.renewAt) return Promise.resolve(current.value);
      pending ??= fetchNew().finally(() => (pending = undefined));
      return pending;
    },
    renew: (sent) => {
      if (current?.value === sent) current = undefined;
      return true;
    },
  };
}

/** Who the client is: exactly one of `apiKey`, `accessToken`, or `clientId` with `clientSecret`. */
export interface ClientCredentials {
  /** An API key secret (`svc_live_...`), sent as `Authorization: Bearer <apiKey>`. */
  apiKey?: string;
  /** An access token (`svc_at_...`), sent as it is; not renewed. */
  accessToken?: string;
  /** A confidential OAuth client (`oc_...`) whose tokens the client fetches and renews itself. */
  clientId?: string;
  clientSecret?: string;
  /** With `clientId`: space-separated scopes to ask for (default: every scope of the client). */
  scope?: string;
}

const given = (value: unknown): value is string => typeof value === 'string' && value !== '';

/** The credentials the options name, exactly one kind of them; an OAuth client's tokens come from `fetchToken`. */
export function credentialsOf(
  options: ClientCredentials,
  fetchToken: (clientId: string, clientSecret: string, scope?: string) => Promise<Token>,
): Credentials {
  const kinds = [given(options.apiKey), given(options.accessToken), given(options.clientId) || given(options.clientSecret)].filter(Boolean).length;
  if (kinds !== 1) throw new TypeError('createClient: give exactly one of apiKey, accessToken, or clientId with clientSecret');
  if (given(options.apiKey)) return bearer(options.apiKey);
  if (given(options.accessToken)) return bearer(options.accessToken);
  const { clientId, clientSecret, scope } = options;
  if (!given(clientId) || !given(clientSecret)) throw new TypeError('createClient: clientId and clientSecret go together');
  return fetchedTokens(() => fetchToken(clientId, clientSecret, scope));
}
