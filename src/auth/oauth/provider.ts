import { generateKeyPairSync } from 'node:crypto';
import revokeGrant from 'oidc-provider/lib/helpers/revoke.js';
import libraryState from 'oidc-provider/lib/helpers/weak_cache.js';
import Provider, { errors, interactionPolicy, type Adapter, type AdapterPayload, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { AUTHORIZE_PARAMETER_MAX_LENGTH, contract, KEY_SCOPES, PENDING_CONSENTS_PER_CLIENT } from '../../../contract/index.ts';
import { retryAfterSeconds } from '../../rate-limits.ts';
import type { Db } from '../../store/db.ts';
import { findOAuthClient, type OAuthClientRow } from '../../store/oauth-clients.ts';
import { AlreadyConsumed, OAuthRecords, TooManyPendingConsents, type RecordHooks } from '../../store/oauth-records.ts';
import { digestsEqual, hashSecret } from '../secrets.ts';
import { withoutCredentials } from './answers.ts';
import { errorPage, FORM_POST_CSP, formPostPage, PAGE_CSP } from './pages.ts';
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX } from './token-format.ts';

const REFRESH_TTL_S = 30 * 24 * 3600;
const CODE_TTL_S = 60;
/** How long a person has to sign in on the consent page. */
const INTERACTION_TTL_S = 600;

export interface OAuthProviderOptions {
  db: Db;
  /** GRANTD_PUBLIC_URL: the issuer, and where the endpoints are advertised. */
  issuer: string;
  /** Access token lifetime in seconds (GRANTD_OAUTH_ACCESS_TTL). */
  accessTtl: number;
  /** Keys that sign the library's cookies, the same on every node. */
  cookieKeys: string[];
  hooks: RecordHooks;
  /**
   * Takes a point of the client's rate limit (GRANTD_RATE_LIMIT, the count its tokens use on /v1):
   * 0 when the request may go on, else the whole seconds to wait. None: no limit.
   */
  perClientLimit?: ((clientId: string) => Promise<number>) | undefined;
}

/** What grantd's client rows add to the library's client metadata. */
interface GrantdClientMetadata {
  tenant_id: string;
  agent: string | null;
  /** The client's own scopes, what a client_credentials token without `scope` carries. */
  own_scope: string;
}

/**
 * The names in a `scope` parameter that are no scope of grantd. The library drops such names
 * silently; RFC 6749 5.2 and 4.1.2.1 call a scope naming one `invalid_scope`.
 */
export function unknownScopes(scope: unknown): string[] {
  if (typeof scope !== 'string') return [];
  return scope.split(' ').filter((name) => name !== '' && !(KEY_SCOPES as readonly string[]).includes(name));
}

const unknownScopeError = (names: string[]) =>
  new errors.InvalidScope(`requested scope is not a scope of grantd (${KEY_SCOPES.join(', ')})`, names.join(' '));

/** What a client may ask for: its scopes, and every scope when it holds `admin`, which implies them all. */
const askableScopes = (scopes: readonly string[]): readonly string[] => (scopes.includes('admin') ? KEY_SCOPES : scopes);

/** The client's metadata as the library reads it (RFC 7591 names), or undefined when there is no such client. */
function clientMetadata(row: OAuthClientRow) {
  const confidential = row.type === 'confidential';
  const grantTypes =
    row.agentExternalId !== null
      ? ['client_credentials']
      : confidential
        ? ['client_credentials', 'authorization_code', 'refresh_token']
        : ['authorization_code', 'refresh_token'];
  return {
    client_id: row.clientId,
    client_name: row.name,
    // The digest stands in for the secret: compareClientSecret below compares digests.
    ...(confidential && row.secretHash ? { client_secret: Buffer.from(row.secretHash).toString('base64url') } : {}),
    token_endpoint_auth_method: confidential ? 'client_secret_basic' : 'none',
    grant_types: row.redirectUris.length > 0 ? grantTypes : grantTypes.filter((type) => type === 'client_credentials'),
    response_types: row.redirectUris.length > 0 && grantTypes.includes('authorization_code') ? ['code'] : [],
    redirect_uris: row.redirectUris,
    // The library refuses a requested scope outside this list: a narrower one than admin is allowed.
    scope: askableScopes(row.scopes).join(' '),
    tenant_id: row.tenantId,
    agent: row.agentExternalId,
    own_scope: row.scopes.join(' '),
  };
}

/** Clients as the library reads them: grantd's rows; they are managed through /v1/oauth/clients only. */
function clientStore(db: Db): Adapter {
  const managedElsewhere = async (): Promise<never> => {
    throw new Error('OAuth clients are managed through /v1/oauth/clients');
  };
  return {
    find: async (id: string) => {
      const row = await findOAuthClient(db, id);
      return row ? (clientMetadata(row) as AdapterPayload) : undefined;
    },
    upsert: managedElsewhere,
    findByUid: managedElsewhere,
    findByUserCode: managedElsewhere,
    consume: managedElsewhere,
    destroy: managedElsewhere,
    revokeByGrantId: managedElsewhere,
  };
}

const oauthPath = (route: { path: string }) => route.path;

/**
 * The OAuth 2.0 authorization server: oidc-provider, configured for grantd's clients, scopes and
 * storage. The library does the protocol (client authentication, codes, PKCE, refresh rotation and
 * reuse detection, introspection, revocation, metadata); grantd supplies storage, the consent page
 * and these few decisions.
 */
export function createOAuthProvider(options: OAuthProviderOptions): Provider {
  const { db, hooks } = options;
  const configuration: Configuration = {
    adapter: (name: string) => (name === 'Client' ? clientStore(db) : new OAuthRecords(db, name, hooks)),
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    extraClientMetadata: { properties: ['tenant_id', 'agent', 'own_scope'] },
    scopes: [...KEY_SCOPES],
    claims: {},
    responseTypes: ['code'],
    pkce: { required: () => true },
    cookies: { keys: options.cookieKeys },
    // Signs nothing grantd issues (no ID tokens, opaque access tokens); the library needs one key.
    jwks: { keys: [generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'jwk' })] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: sameTenant },
      revocation: { enabled: true, allowedPolicy: sameClient },
      userinfo: { enabled: false },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      dPoP: { enabled: false },
    },
    routes: {
      authorization: oauthPath(contract.oauth.authorize),
      token: oauthPath(contract.oauth.token),
      introspection: oauthPath(contract.oauth.introspect),
      revocation: oauthPath(contract.oauth.revoke),
    },
    interactions: {
      // Absolute, from the issuer (GRANTD_PUBLIC_URL), as every URL grantd advertises and redirects to.
      url: (_ctx, interaction) => `${options.issuer}${contract.oauth.consent.path.replace(':uid', interaction.uid)}`,
      policy: authorizationPolicy(),
    },
    ttl: {
      AccessToken: options.accessTtl,
      ClientCredentials: options.accessTtl,
      RefreshToken: REFRESH_TTL_S,
      AuthorizationCode: CODE_TTL_S,
      Grant: REFRESH_TTL_S,
      Interaction: INTERACTION_TTL_S,
      Session: INTERACTION_TTL_S,
    },
    // Every authorization-code grant gets a refresh token, used once: each use returns a new one.
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Tokens live their own lifetime; the sign-in session on the consent page is short.
    expiresWithSession: async () => false,
    extraTokenClaims: async (_ctx, token) => {
      if (token.kind !== 'ClientCredentials') return undefined;
      const agent = (token.client as unknown as GrantdClientMetadata | undefined)?.agent;
      return { sub: agent ? `agent:${agent}` : token.clientId };
    },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    renderError: async (ctx, out) => {
      ctx.set('Content-Security-Policy', PAGE_CSP);
      ctx.type = 'html';
      ctx.body = errorPage(out.error, out.error_description ?? '');
    },
    conformIdTokenClaims: false,
    // Only the grant the consent page just made: every authorization asks for a sign-in again.
    loadExistingGrant: async (ctx) => {
      const grantId = ctx.oidc.result?.consent?.grantId;
      return typeof grantId === 'string' ? ctx.oidc.provider.Grant.find(grantId) : undefined;
    },
  };
  const provider = new Provider(options.issuer, configuration);
  // The library builds its URLs from the request's origin, which the OAuth router sets to the issuer's.
  provider.proxy = true;
  adaptModels(provider);
  libraryState(provider).responseModes.set('form_post', formPost);
  if (options.perClientLimit) limitPerClient(provider, options.perClientLimit);
  // The library's error on a client-authenticating endpoint, kept for the answer to be corrected below.
  const failures = new WeakMap<KoaContextWithOIDC, Error>();
  const keep = (ctx: KoaContextWithOIDC, error: Error) => failures.set(ctx, error);
  provider.on('grant.error', keep);
  provider.on('revocation.error', keep);
  provider.on('introspection.error', keep);
  provider.use(async (ctx, next) => {
    await next();
    if (ctx.path === '/.well-known/oauth-authorization-server' && ctx.status === 200) withoutOpenIdFields(ctx.body as Record<string, unknown>);
    const error = failures.get(ctx as KoaContextWithOIDC);
    if (error) asRfc6749(ctx as KoaContextWithOIDC, error);
  });
  return provider;
}

/**
 * The few places the library's models are adapted rather than configured: token values carry a
 * recognisable prefix, client secrets are compared by digest (only digests are stored), and a
 * client_credentials request without `scope` gets the client's scopes (the library would issue
 * none).
 */
function adaptModels(provider: Provider): void {
  const prefixed = (model: { prototype: object }, prefix: string) => {
    const proto = model.prototype as { generateTokenId: () => string };
    const generate = proto.generateTokenId;
    proto.generateTokenId = function (this: unknown) {
      return prefix + generate.call(this);
    };
  };
  prefixed(provider.AccessToken, ACCESS_TOKEN_PREFIX);
  prefixed(provider.ClientCredentials, ACCESS_TOKEN_PREFIX);
  prefixed(provider.RefreshToken, REFRESH_TOKEN_PREFIX);
  usedOnce(provider.AuthorizationCode, 'authorization code');
  usedOnce(provider.RefreshToken, 'refresh token');
  capPendingConsents(provider);

  (provider.Client.prototype as unknown as { compareClientSecret: (actual: string) => boolean }).compareClientSecret = function (
    this: { clientSecret?: string },
    actual: string,
  ) {
    if (typeof actual !== 'string' || !this.clientSecret) return false;
    return digestsEqual(hashSecret(actual), Buffer.from(this.clientSecret, 'base64url'));
  };

  const credentials = provider.ClientCredentials.prototype as unknown as {
    save: () => Promise<string>;
    scope?: string;
    client?: Partial<GrantdClientMetadata>;
  };
  const save = credentials.save;
  credentials.save = function (this: typeof credentials) {
    // The library has dropped the names that are no scope before this point: the request's own
    // parameter tells whether it named one.
    const unknown = unknownScopes(Provider.ctx?.oidc.body?.scope);
    if (unknown.length > 0) throw unknownScopeError(unknown);
    // No scope asked for: the client's own.
    this.scope ||= this.client?.own_scope || undefined;
    return save.call(this);
  };
}

/**
 * Codes and refresh tokens are single use under concurrency too. The library reads whether one was
 * used before it marks it used, so simultaneous requests could each find it unused; the storage
 * marks it only when it is still unused (OAuthRecords.consume), and every request that loses is
 * answered as the library answers a replay: the whole grant ends (each token issued from the code
 * or along the refresh chain, the winner's included) and the request is invalid_grant (RFC 6749
 * 4.1.2, 10.5; the OAuth 2.0 Security BCP's refresh token reuse detection).
 */
function usedOnce(model: { prototype: object }, label: string): void {
  const proto = model.prototype as { consume: () => Promise<void>; grantId?: string };
  const consume = proto.consume;
  proto.consume = async function (this: typeof proto) {
    try {
      await consume.call(this);
    } catch (error) {
      if (!(error instanceof AlreadyConsumed)) throw error;
      await revokeGrant(Provider.ctx!, this.grantId);
      throw new errors.InvalidGrant(`${label} already used`);
    }
  };
}

/**
 * An authorization request is stored (an interaction) until the person decides; a client has at
 * most PENDING_CONSENTS_PER_CLIENT at once, the storage's count. One more is answered as the
 * endpoint's rate limits are: a 429 page with Retry-After (when the oldest pending one expires),
 * not a redirect, so that the person in the browser is told when to try again.
 */
function capPendingConsents(provider: Provider): void {
  const proto = provider.Interaction.prototype as unknown as { save: (ttl: number) => Promise<string> };
  const save = proto.save;
  proto.save = async function (this: unknown, ttl: number) {
    try {
      return await save.call(this, ttl);
    } catch (error) {
      if (!(error instanceof TooManyPendingConsents)) throw error;
      const wait = retryAfterSeconds(error.freeInMs);
      Provider.ctx?.set('Retry-After', String(wait));
      const refused = new RateLimited(`this client has ${PENDING_CONSENTS_PER_CLIENT} authorizations waiting for consent; retry in ${wait} s`);
      refused.allow_redirect = false;
      throw refused;
    }
  };
}

/**
 * RFC 6749 5.2's codes where the library answers another (it says invalid_request for each of
 * these). Told apart by the error's class and the request's state, not the error's text:
 * - no client authentication at all (no Authorization header, no client_id, secret or assertion):
 *   401 invalid_client, `WWW-Authenticate: Basic`;
 * - an Authorization header of a scheme other than Basic, the only credentials sent (a Bearer key
 *   on the revocation endpoint, for one; introspection takes those before the library sees them):
 *   401 invalid_client, `WWW-Authenticate: Basic`, an unsupported authentication method;
 * - a grant type the client may not use: 400 unauthorized_client.
 */
function asRfc6749(ctx: KoaContextWithOIDC, error: Error): void {
  if (!(error instanceof errors.InvalidRequest) || error instanceof errors.SessionNotFound) return;
  const { client, params } = ctx.oidc ?? {};
  const refuse = (status: number, code: string, description: string) => {
    ctx.status = status;
    ctx.body = { error: code, error_description: description };
    if (status === 401) ctx.set('WWW-Authenticate', `Basic realm="grantd"`);
  };
  if (client) {
    const grantType = params?.grant_type;
    if (ctx.oidc.route === 'token' && typeof grantType === 'string' && !client.grantTypeAllowed(grantType)) {
      refuse(400, 'unauthorized_client', 'this client may not use this grant type');
    }
    return;
  }
  // Parameters that were never read (a malformed body) tell nothing of the client: left as they are.
  if (!params || params.client_id !== undefined || params.client_secret !== undefined || params.client_assertion !== undefined) return;
  const authorization = ctx.headers.authorization;
  if (authorization === undefined) {
    withoutCredentials.add(ctx.res);
    refuse(401, 'invalid_client', 'authenticate as the client (client_secret_basic or client_secret_post)');
  } else if (!/^basic(?: |$)/i.test(authorization)) {
    refuse(401, 'invalid_client', 'unsupported client authentication method: use client_secret_basic or client_secret_post');
  }
}

/**
 * response_mode=form_post, in place of the library's own: grantd's answers carry a policy that runs
 * no script, so the library's page stayed blank. This page's policy admits exactly its one script.
 * Statuses as the library's: 400 for an error, else 200 (or the status the error already set).
 */
function formPost(ctx: KoaContextWithOIDC, redirectUri: string, params: Record<string, string>): void {
  if (![200, 400, 500].includes(ctx.status)) ctx.status = 'error' in params ? 400 : 200;
  ctx.set('Content-Security-Policy', FORM_POST_CSP);
  ctx.type = 'html';
  ctx.body = formPostPage(redirectUri, params);
}

/** 429 on the token endpoint, as RFC 6749 errors are shaped (the contract's and docs/oauth.md's). */
class RateLimited extends errors.OIDCProviderError {
  constructor(description: string) {
    super(429, 'temporarily_unavailable');
    this.error_description = description;
  }
}

/**
 * Rate limits apply per client as they do per key (docs/oauth.md): every token request of an
 * authenticated client takes a point under its client_id, the count its tokens take on /v1. The
 * library has no hook between client authentication and the grant, so each grant type's handler
 * is wrapped, in the library's internal table of them, to take the point first.
 */
function limitPerClient(provider: Provider, take: (clientId: string) => Promise<number>): void {
  const { grantTypeHandlers } = libraryState(provider);
  for (const [grantType, handle] of grantTypeHandlers) {
    grantTypeHandlers.set(grantType, async (ctx) => {
      const wait = await take(ctx.oidc.client!.clientId);
      if (wait > 0) {
        ctx.set('Retry-After', String(wait));
        throw new RateLimited(`this client is over its rate limit; retry in ${wait} s`);
      }
      return handle(ctx);
    });
  }
}

/**
 * The library's authorization policy, with two checks first, each refusal redirected to the client
 * (RFC 6749 4.1.2.1) before anything is stored:
 * - a `scope` naming anything that is no scope of grantd is invalid_scope, as the library refuses a
 *   scope the client does not have. The library has dropped such names from its parameters by
 *   then; the request's query still holds them;
 * - a parameter the library keeps (`state`, and hints grantd does not read such as `login_hint`)
 *   longer than AUTHORIZE_PARAMETER_MAX_LENGTH is invalid_request: the request is stored until the
 *   person decides. `redirect_uri` is one of the client's, bounded when it was registered.
 */
function authorizationPolicy() {
  const policy = interactionPolicy.base();
  const { checks } = policy.get('login')!;
  checks.add(
    new interactionPolicy.Check('grantd_unknown_scope', 'requested scope is not a scope of grantd', (ctx) => {
      const unknown = unknownScopes(ctx.query.scope);
      if (unknown.length > 0) throw unknownScopeError(unknown);
      return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    }),
    0,
  );
  checks.add(
    new interactionPolicy.Check('grantd_parameter_length', 'a parameter is too long', (ctx) => {
      const tooLong = Object.entries(ctx.oidc.params ?? {}).find(
        ([name, value]) => name !== 'redirect_uri' && typeof value === 'string' && value.length > AUTHORIZE_PARAMETER_MAX_LENGTH,
      );
      if (tooLong) throw new errors.InvalidRequest(`${tooLong[0]} is longer than ${AUTHORIZE_PARAMETER_MAX_LENGTH} characters`);
      return interactionPolicy.Check.NO_NEED_TO_PROMPT;
    }),
    0,
  );
  return policy;
}

/**
 * RFC 8414 metadata without what only OpenID Connect uses: grantd issues no ID tokens, and serves
 * no JWKS (its tokens are opaque).
 */
function withoutOpenIdFields(metadata: Record<string, unknown>): void {
  for (const field of [
    'jwks_uri',
    'claims_supported',
    'claims_parameter_supported',
    'subject_types_supported',
    'id_token_signing_alg_values_supported',
    'request_uri_parameter_supported',
    'acr_values_supported',
    'claim_types_supported',
  ]) {
    delete metadata[field];
  }
  metadata.scopes_supported = [...KEY_SCOPES];
}

/** Introspection answers only for a token of the caller's tenant; any other is `{"active": false}`. */
async function sameTenant(
  ctx: KoaContextWithOIDC,
  client: { clientId: string; clientAuthMethod?: string },
  token: { clientId?: string },
): Promise<boolean> {
  if (!token.clientId) return false;
  // A public client proves nothing but its id, which every authorization URL shows: its own tokens only.
  if (client.clientAuthMethod === 'none' && token.clientId !== client.clientId) return false;
  const owner = token.clientId === client.clientId ? client : await ctx.oidc.provider.Client.find(token.clientId);
  return tenantOf(owner) !== undefined && tenantOf(owner) === tenantOf(client);
}

/** A client revokes its own tokens only (RFC 7009 2.1); another's is answered 200 and left alone. */
async function sameClient(_ctx: KoaContextWithOIDC, client: { clientId: string }, token: { clientId?: string }): Promise<boolean> {
  return token.clientId === client.clientId;
}

const tenantOf = (client: unknown): string | undefined => (client as Partial<GrantdClientMetadata> | undefined)?.tenant_id;
