// Signing in to the console: OAuth 2.0 authorization code with PKCE (S256) as a public client of
// the tenant (docs/console.md). Tokens live in this module's memory only: a reload or sign-out
// ends them. The only things stored in the browser are the client's public id (localStorage, to
// prefill the sign-in form) and, during the redirect to the consent page and back, the PKCE
// verifier and state (sessionStorage, removed as the browser returns).
import { createClient, createPublicOAuthClient, type GrantdClient, type PublicOAuthClient, type TokenSet } from '../client/index.ts';

const CLIENT_ID_KEY = 'grantd.console.client_id';
const PENDING_KEY = 'grantd.console.pending';
/** What the console asks for: its pages manage keys and OAuth clients, which take admin. */
export const CONSOLE_SCOPE = 'admin';

/** The console's folder (…/console/), whichever of its pages is shown. */
export const consoleBase = (): URL => new URL('./', window.location.href);
/** grantd's root, where /v1 lives (the console is served at <root>console/). */
export const grantdRoot = (): URL => new URL('../', consoleBase());
/** The redirect URI the console's OAuth client must list, byte for byte. */
export const redirectUri = (): string => new URL('callback', consoleBase()).href;
export const isCallback = (): boolean => new URL(window.location.href).pathname.endsWith('/console/callback');

export const rememberedClientId = (): string =>
  new URL(window.location.href).searchParams.get('client_id') ?? window.localStorage.getItem(CLIENT_ID_KEY) ?? '';

const base64url = (bytes: Uint8Array): string =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const randomText = (bytes: number): string => base64url(crypto.getRandomValues(new Uint8Array(bytes)));

/** RFC 7636 S256: BASE64URL(SHA-256(verifier)). Web Crypto does the work; no library needed for two lines. */
async function challengeOf(verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
}

interface Pending {
  clientId: string;
  state: string;
  verifier: string;
}

/** Sends the browser to grantd's authorization endpoint, which leads to the consent page. */
export async function startSignIn(clientId: string): Promise<void> {
  const pending: Pending = { clientId, state: randomText(16), verifier: randomText(32) };
  window.localStorage.setItem(CLIENT_ID_KEY, clientId);
  window.sessionStorage.setItem(PENDING_KEY, JSON.stringify(pending));
  const authorize = new URL('v1/oauth/authorize', grantdRoot());
  authorize.search = new URLSearchParams({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: redirectUri(),
    scope: CONSOLE_SCOPE,
    state: pending.state,
    code_challenge: await challengeOf(pending.verifier),
    code_challenge_method: 'S256',
  }).toString();
  window.location.assign(authorize.href);
}

/** Why a sign-in could not finish, as the console shows it. */
export class SignInError extends Error {
  constructor(
    readonly title: string,
    readonly detail: string,
  ) {
    super(`${title}: ${detail}`);
    this.name = 'SignInError';
  }
}

function takePending(): Pending | null {
  const text = window.sessionStorage.getItem(PENDING_KEY);
  window.sessionStorage.removeItem(PENDING_KEY);
  return text ? (JSON.parse(text) as Pending) : null;
}

/** Where the consent page sent the browser back: checks state and issuer (RFC 9207), trades the code for tokens. */
export async function finishSignIn(onEnd: (reason: string) => void): Promise<Session> {
  const params = new URL(window.location.href).searchParams;
  const pending = takePending();
  // The code must not stay in the address bar or the history.
  window.history.replaceState(null, '', consoleBase().href);
  if (params.get('state') !== pending?.state || !pending) {
    throw new SignInError('Sign-in not recognised', 'This sign-in was not started from this tab, or it was already used. Sign in again.');
  }
  const issuer = grantdRoot().href.replace(/\/$/, '');
  if (params.get('iss') !== null && params.get('iss') !== issuer) {
    throw new SignInError('Wrong issuer', `The answer came from ${params.get('iss')}, not ${issuer}.`);
  }
  const error = params.get('error');
  if (error) throw new SignInError(error === 'access_denied' ? 'Sign-in denied' : error, params.get('error_description') ?? '');
  const code = params.get('code');
  if (!code) throw new SignInError('No code', 'The authorization server sent no code back.');
  const oauth = createPublicOAuthClient({ clientId: pending.clientId, baseUrl: grantdRoot().href });
  const tokens = await oauth.exchangeCode({ code, redirectUri: redirectUri(), codeVerifier: pending.verifier });
  return new Session(oauth, tokens, onEnd);
}

/** Renew a minute before expiry, or halfway through a short-lived token. */
const renewInMs = (expiresIn: number): number => Math.max(1, expiresIn - Math.min(60, expiresIn / 2)) * 1000;

/** A signed-in console: the API client of the current access token, renewed by the refresh token. */
export class Session {
  api: GrantdClient;
  /** The tenant signed in to, as the token endpoint names it: the client's, for the whole session. */
  readonly tenant: TokenSet['tenant'];
  /** Null once the session ended. */
  private tokens: TokenSet | null;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** Set as the session ends: a renewal still under way then is dropped when it returns. */
  private ended = false;
  /**
   * Set as sign-out begins: a renewal under way then is waited for, and its tokens are kept only to be
   * revoked (sign-out revokes the newest refresh token: revoking the one the renewal spends, while
   * the renewal is under way, would make the renewal a refused request, and leave nothing pages may use).
   */
  private signingOut = false;
  /** The renewal under way, if any. */
  private renewing: Promise<void> | null = null;
  private readonly watchers = new Set<(api: GrantdClient | null) => void>();

  constructor(
    private readonly oauth: PublicOAuthClient,
    tokens: TokenSet,
    private readonly onEnd: (reason: string) => void,
  ) {
    this.tokens = tokens;
    this.tenant = tokens.tenant;
    this.api = this.clientOf(tokens);
    this.schedule();
  }

  private clientOf(tokens: TokenSet): GrantdClient {
    return createClient({ accessToken: tokens.access_token, baseUrl: grantdRoot().href, timeoutMs: 15_000 });
  }

  private schedule(): void {
    if (!this.tokens?.refresh_token) return;
    this.timer = setTimeout(() => {
      this.renewing = this.refresh().finally(() => (this.renewing = null));
    }, renewInMs(this.tokens.expires_in));
  }

  private async refresh(): Promise<void> {
    const refreshToken = this.tokens?.refresh_token;
    if (!refreshToken) return;
    try {
      const tokens = await this.oauth.refresh(refreshToken);
      if (this.ended) return;
      this.tokens = tokens;
      if (this.signingOut) return;
      this.api = this.clientOf(tokens);
      this.schedule();
      this.tell(this.api);
    } catch {
      if (this.ended || this.signingOut) return;
      this.end('Your session could not be renewed (its key or client may have been revoked). Sign in again.');
    }
  }

  /**
   * Calls `watcher` with the new client on each renewal, and with null as the session ends (before
   * sign-out revokes its tokens): what holds on to `api` (the changes tail) moves on or stops.
   * Returns the function that stops watching.
   */
  watch(watcher: (api: GrantdClient | null) => void): () => void {
    this.watchers.add(watcher);
    return () => this.watchers.delete(watcher);
  }

  private tell(api: GrantdClient | null): void {
    for (const watcher of [...this.watchers]) watcher(api);
  }

  /** Forgets the tokens and stops renewing them. */
  end(reason: string): void {
    this.ended = true;
    clearTimeout(this.timer);
    this.tell(null);
    this.tokens = null;
    this.onEnd(reason);
  }

  /**
   * Revokes the refresh token, which ends its whole grant (the access token too), then forgets both.
   * What holds on to `api` stops first; a renewal under way is waited for, and its refresh token revoked.
   */
  async signOut(): Promise<void> {
    this.signingOut = true;
    clearTimeout(this.timer);
    this.tell(null);
    await this.renewing;
    const refreshToken = this.tokens?.refresh_token;
    this.ended = true;
    try {
      if (refreshToken) await this.oauth.revoke(refreshToken, 'refresh_token');
    } finally {
      this.end('You are signed out.');
    }
  }
}

/** What every page of the console is given: the signed-in session. */
export interface PageProps {
  session: Session;
}
