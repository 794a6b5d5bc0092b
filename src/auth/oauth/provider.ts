import { generateKeyPairSync } from 'node:crypto';
import Provider, { errors, interactionPolicy, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import { AUTHORIZE_PARAMETER_MAX_LENGTH, contract, KEY_SCOPES } from '../../../contract/index.ts';
import type { Db } from '../../store/db.ts';
import { OAuthRecords, type RecordHooks } from '../../store/oauth-records.ts';
import { tenantNameOf } from '../../store/tenants.ts';
import { withoutCredentials } from './answers.ts';
import { agentOfClient, clientStore, GRANTD_CLIENT_METADATA, ownScopeOfClient, tenantOfClient } from './clients.ts';
import { adaptLibrary } from './library-seams.ts';
import { errorPage, PAGE_CSP } from './pages.ts';
import { unknownScopeError, unknownScopes } from './refusals.ts';

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
  /** The resource identifiers (RFC 8707) a token may be issued for: the whole server (first), the API, the MCP endpoint. */
  resources: string[];
  /**
   * Takes a point of the client's rate limit (GRANTD_RATE_LIMIT, the count its tokens use on /v1):
   * 0 when the request may go on, else the whole seconds to wait. None: no limit.
   */
  perClientLimit?: ((clientId: string) => Promise<number>) | undefined;
}

const oauthPath = (route: { path: string }) => route.path;

/**
 * The OAuth 2.0 authorization server: oidc-provider, configured for grantd's clients, scopes and
 * storage. The library does the protocol (client authentication, codes, PKCE, refresh rotation and
 * reuse detection, introspection, revocation, metadata); grantd supplies storage, the consent page
 * and these few decisions. What it changes inside the library, past this configuration, is in
 * library-seams.ts.
 */
export function createOAuthProvider(options: OAuthProviderOptions): Provider {
  const { db, hooks } = options;
  const configuration: Configuration = {
    adapter: (name: string) => (name === 'Client' ? clientStore(db) : new OAuthRecords(db, name, hooks)),
    clientAuthMethods: ['client_secret_basic', 'client_secret_post', 'none'],
    clientDefaults: { id_token_signed_response_alg: 'ES256' },
    extraClientMetadata: { properties: GRANTD_CLIENT_METADATA },
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
      resourceIndicators: { enabled: true, getResourceServerInfo: resourceServerOf(options.resources) },
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
      const agent = token.client && agentOfClient(token.client);
      return { sub: agent ? `agent:${agent}` : token.clientId };
    },
    findAccount: async (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    renderError: async (ctx, out) => {
      ctx.set('Content-Security-Policy', PAGE_CSP);
      ctx.type = 'html';
      ctx.body = errorPage(out.error, out.error_description ?? '', `${options.issuer}/console/`);
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
  adaptLibrary(provider, options.resources, options.perClientLimit);
  // The library's error on a client-authenticating endpoint, kept for the answer to be corrected below.
  const failures = new WeakMap<KoaContextWithOIDC, Error>();
  const keep = (ctx: KoaContextWithOIDC, error: Error) => failures.set(ctx, error);
  provider.on('grant.error', keep);
  provider.on('revocation.error', keep);
  provider.on('introspection.error', keep);
  provider.use(async (koa, next) => {
    await next();
    const ctx = koa as KoaContextWithOIDC;
    if (ctx.path === '/.well-known/oauth-authorization-server' && ctx.status === 200) withoutOpenIdFields(ctx.body as Record<string, unknown>);
    // grantd serves registration itself (src/http/oauth/registration.ts), not the library: RFC 8414 advertises it.
    if (ctx.path === '/.well-known/oauth-authorization-server' && ctx.status === 200)
      Object.assign(ctx.body as Record<string, unknown>, { registration_endpoint: `${options.issuer}${contract.oauth.register.path}` });
    const error = failures.get(ctx);
    if (error) asRfc6749(ctx, error);
    if (error instanceof errors.InvalidGrant && ctx.oidc?.route === 'token') describeGrantError(ctx, error);
    if (ctx.oidc?.route === 'token' && ctx.status === 200) await nameTheTenant(ctx, db);
    refusePublicIntrospection(ctx);
    // RFC 6750 3 and RFC 6749 5.2: every 401 names how to authenticate, also when the credentials came in the body (client_secret_post).
    if (ctx.status === 401 && !ctx.response.get('WWW-Authenticate')) ctx.set('WWW-Authenticate', `Basic realm="grantd"`);
  });
  return provider;
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
 * RFC 7662 2.1: introspection is for protected resources and confidential clients; a public client
 * proves nothing but its id. Its request is answered 401 invalid_client whatever the token (the
 * library's answer, which changed nothing, is replaced).
 */
function refusePublicIntrospection(ctx: KoaContextWithOIDC): void {
  if (ctx.oidc?.route !== 'introspection' || ctx.oidc.client?.clientAuthMethod !== 'none' || ctx.status !== 200) return;
  ctx.status = 401;
  ctx.body = {
    error: 'invalid_client',
    error_description: 'a public client cannot introspect: authenticate as a confidential client or with a Bearer key or token',
  };
}

/**
 * The library answers every invalid_grant "grant request is invalid" and keeps the cause to
 * itself; its causes name no secret, so the client is told which it was (docs/oauth.md#errors).
 */
const GRANT_ERROR_CAUSES: Record<string, string> = {
  'code_verifier does not match code_challenge': "the code_verifier does not match the authorization request's code_challenge (PKCE)",
  'code_verifier must be provided': 'code_verifier is missing: the authorization request had a code_challenge (PKCE)',
  'authorization code already consumed': 'the authorization code was already used: every token issued from it is revoked',
  'authorization code already used': 'the authorization code was already used: every token issued from it is revoked',
  'refresh token already used': 'the refresh token was already used (each is used once): every token of its grant is revoked',
  'authorization code not found': 'the authorization code is unknown, or its grant has ended',
  'refresh token not found': 'the refresh token is unknown, or its grant has ended',
  'authorization code is expired': 'the authorization code has expired (it lives 60 s)',
  'refresh token is expired': 'the refresh token has expired',
  'authorization code redirect_uri mismatch': "redirect_uri differs from the authorization request's",
  'client mismatch': 'the code or refresh token was issued to another client',
  'grant not found': 'the grant has ended (revoked, or its signing-in key revoked)',
};

function describeGrantError(ctx: KoaContextWithOIDC, error: Error & { error_detail?: string }): void {
  const body = ctx.body as { error?: string; error_description?: string } | undefined;
  if (body?.error !== 'invalid_grant' || error.error_detail === undefined) return;
  body.error_description = GRANT_ERROR_CAUSES[error.error_detail] ?? `grant request is invalid: ${error.error_detail}`;
}

/**
 * Tokens issued name the tenant they act in, the client's, as `tenant: {id, name}` (RFC 6749 5.1
 * allows parameters of one's own): the console shows whom it is signed in to from the answer it
 * already receives, as the consent page names the tenant, with no route of its own (tenants have
 * none). The client authenticated, or was found for its public id, before tokens were issued.
 */
async function nameTheTenant(ctx: KoaContextWithOIDC, db: Db): Promise<void> {
  const tenantId = tenantOfClient(ctx.oidc.client!);
  Object.assign(ctx.body as Record<string, unknown>, { tenant: { id: tenantId, name: await tenantNameOf(db, tenantId) } });
}

/**
 * The library's authorization policy, with three checks first, each refusal redirected to the client
 * (RFC 6749 4.1.2.1) before anything is stored:
 * - a `scope` naming anything that is no scope of grantd is invalid_scope, as the library refuses a
 *   scope the client does not have. The library has dropped such names from its parameters by
 *   then; the request's query still holds them;
 * - a parameter the library keeps (`state`, and hints grantd does not read such as `login_hint`)
 *   longer than AUTHORIZE_PARAMETER_MAX_LENGTH is invalid_request: the request is stored until the
 *   person decides. `redirect_uri` is one of the client's, bounded when it was registered;
 * and one that changes nothing but fills in a missing `scope`.
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
    new interactionPolicy.Check('grantd_default_scope', 'no scope was requested', (ctx) => {
      // RFC 6749 3.3: a request without `scope` is for the client's registered scopes, which the consent page then lists.
      ctx.oidc.params!.scope ??= ownScopeOfClient(ctx.oidc.client!) || undefined;
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
 * RFC 8707: a token may be issued for one of grantd's resources, its audience then (stored with it
 * and checked on each request, src/http/middleware/authenticate.ts); any other `resource` is
 * invalid_target. Every scope is a scope of each; the tokens stay opaque.
 */
function resourceServerOf(resources: string[]) {
  return async (_ctx: KoaContextWithOIDC, identifier: string) => {
    if (!resources.includes(identifier)) throw new errors.InvalidTarget(`resource must be one of ${resources.join(', ')}`);
    return { scope: KEY_SCOPES.join(' '), accessTokenFormat: 'opaque' as const };
  };
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
async function sameTenant(ctx: KoaContextWithOIDC, client: { clientId: string }, token: { clientId?: string }): Promise<boolean> {
  if (!token.clientId) return false;
  const owner = token.clientId === client.clientId ? client : await ctx.oidc.provider.Client.find(token.clientId);
  return owner !== undefined && tenantOfClient(owner) === tenantOfClient(client);
}

/**
 * A client revokes its own tokens only. RFC 7009 2.1: when the token was not issued to the client
 * making the request, "the request is refused and the client is informed of the error", in RFC
 * 6749 5.2's form (2.2.1); of its codes, invalid_grant is the one defined for a grant "issued to
 * another client". The token is left alone.
 */
async function sameClient(_ctx: KoaContextWithOIDC, client: { clientId: string }, token: { clientId?: string }): Promise<boolean> {
  if (token.clientId === client.clientId) return true;
  const refused = new errors.InvalidGrant('token issued to another client');
  refused.error_description = 'the token was issued to another client: a client revokes only its own tokens';
  throw refused;
}
