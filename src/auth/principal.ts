/** What every principal carries: its tenant, its scopes, and the tenant's secret for cursors and revisions. */
interface Verified {
  /** What rate limits and the request log count by: the API key's id, or an access token's client's. */
  keyId: string;
  tenantId: string;
  scopes: string[];
  cursorSecret: Buffer;
}

/** An API key. */
export interface ApiKeyPrincipal extends Verified {
  kind: 'api_key';
}

interface AccessToken extends Verified {
  /** The token's client (`keyId` too). */
  clientId: string;
  /** The subject it speaks for when not the client itself: an agent (`agent:<id>`), or the key that signed in (the changes feed's actor). */
  sub?: string;
  /** The resource (RFC 8707) it was issued for; none: the whole server. */
  audience?: string;
  /** When it stops being valid by itself, in ms since the epoch. */
  expiresAt: number;
}

/** An OAuth access token of the client_credentials grant: its client, or the agent that client is bound to. */
export interface ClientCredentialsPrincipal extends AccessToken {
  kind: 'client_credentials';
}

/** An OAuth access token of the authorization_code grant, for which an API key signed in on the consent page. */
export interface AuthorizationCodePrincipal extends AccessToken {
  kind: 'authorization_code';
  /** The API key that signed in for it. */
  signingKeyId: string;
}

/** Who a verified secret speaks for: an API key, or an OAuth access token by its grant. */
export type Principal = ApiKeyPrincipal | ClientCredentialsPrincipal | AuthorizationCodePrincipal;
