import { initContract } from '@ts-rest/core';
import { z } from 'zod';
import { badRequest, bodyProblems, commonProblems, notFound } from './problems.ts';
import { PathIdSchema, TextSchema, TimestampSchema } from './schemas.ts';
import { requires, writes } from './metadata.ts';
import { KeyScopeSchema } from './scopes.ts';

const c = initContract();

export const CLIENT_TYPES = ['confidential', 'public'] as const;

/** A redirect URI is matched exactly: absolute, no fragment (RFC 6749 3.1.2). */
const RedirectUriSchema = z
  .string()
  .max(2048)
  .refine((value) => {
    try {
      const url = new URL(value);
      // http(s) only: the authorization server treats every client as a web client, which may not use other schemes.
      return url.hash === '' && !value.includes('#') && /^https?:$/.test(url.protocol);
    } catch {
      return false;
    }
  }, 'must be an absolute http or https URI without a fragment');

export const CreateOAuthClientSchema = z
  .object({
    name: TextSchema.min(1).max(256).describe('Shown on the consent page'),
    type: z.enum(CLIENT_TYPES).describe('confidential: has a secret; public: none (a browser or mobile app), authorization code with PKCE only'),
    redirect_uris: z.array(RedirectUriSchema).max(32).optional().describe('Where the authorization code may be sent, compared byte for byte'),
    scopes: z.array(KeyScopeSchema).min(1).max(4).describe('The most a token of this client may carry'),
    agent: PathIdSchema.optional().describe(
      "A registered agent's external_id: the client then uses client_credentials only, and its tokens' subject is agent:<id>",
    ),
  })
  .strict();

/** How a client came to be: made by the tenant's admin here, or registered by itself (RFC 7591) and bound at its first consent. */
export const CLIENT_REGISTRATIONS = ['admin', 'dynamic'] as const;
export type ClientRegistration = (typeof CLIENT_REGISTRATIONS)[number];

export const OAuthClientSchema = z.object({
  client_id: z.string().describe('oc_ followed by base62'),
  name: z.string(),
  type: z.enum(CLIENT_TYPES),
  redirect_uris: z.array(z.string()),
  scopes: z.array(KeyScopeSchema),
  agent: z.string().nullable().describe("The agent's external_id, or null"),
  registered: z
    .enum(CLIENT_REGISTRATIONS)
    .describe(
      'admin: made with POST /v1/oauth/clients; dynamic: registered itself (POST /v1/oauth/register) and bound to this tenant at its first consent',
    ),
  created_at: TimestampSchema,
});

export const CreatedOAuthClientSchema = OAuthClientSchema.extend({
  client_secret: z.string().optional().describe('svc_cs_ followed by base62; confidential clients only, returned only here, exactly once'),
});

/** RFC 6749 5.2 error codes, and RFC 7009's and RFC 6750's that these routes use. */
export const OAUTH_ERRORS = [
  'invalid_request',
  'invalid_client',
  'invalid_grant',
  'unauthorized_client',
  'unsupported_grant_type',
  'invalid_scope',
  'unsupported_token_type',
  'invalid_token',
  'insufficient_scope',
  'server_error',
  'temporarily_unavailable',
] as const;

/** The error body OAuth clients expect on the protocol routes (RFC 6749 5.2), not an RFC 7807 problem. */
export const OAuthErrorSchema = z.object({ error: z.enum(OAUTH_ERRORS), error_description: z.string().optional() }).describe('RFC 6749 error');

const oauthError = c.otherResponse({ contentType: 'application/json', body: OAuthErrorSchema });
const html = c.otherResponse({ contentType: 'text/html', body: z.string() });
const FORM = 'application/x-www-form-urlencoded' as const;

export const TokenRequestSchema = z.object({
  grant_type: z.enum(['client_credentials', 'authorization_code', 'refresh_token']),
  scope: z.string().optional().describe("Space-separated; narrows the client's (or the grant's) scopes, never widens them"),
  code: z.string().optional().describe('authorization_code: the code the redirect carried'),
  redirect_uri: z.string().optional().describe('authorization_code: the redirect_uri of the authorization request'),
  code_verifier: z.string().optional().describe('authorization_code: the PKCE verifier'),
  refresh_token: z.string().optional().describe('refresh_token: the latest refresh token; each use returns a new one'),
  client_id: z.string().optional().describe('client_secret_post and public clients'),
  client_secret: z.string().optional().describe('client_secret_post'),
});

export const TokenResponseSchema = z.object({
  access_token: z.string().describe('svc_at_ followed by 43 URL-safe characters (256 random bits)'),
  token_type: z.literal('Bearer'),
  expires_in: z.number().int(),
  scope: z.string(),
  refresh_token: z.string().optional().describe('svc_rt_...; authorization-code grants only'),
  tenant: z
    .object({
      id: z.string().describe("The tenant's id, as `grantd tenant list` shows it"),
      name: z.string().describe('Its name, as the consent page shows it'),
    })
    .describe("The tenant the tokens act in, the client's: a parameter of grantd's own, as RFC 6749 5.1 allows"),
});

/**
 * The longest `state`, and any other parameter but `redirect_uri`, of an authorization request:
 * the request is stored until the person decides (docs/oauth.md#limits-of-authorization-requests).
 */
export const AUTHORIZE_PARAMETER_MAX_LENGTH = 1024;

/** Authorization requests of one client waiting for the person's decision at once, each kept up to 10 minutes. */
export const PENDING_CONSENTS_PER_CLIENT = 100;

export const AuthorizeQuerySchema = z.object({
  response_type: z.literal('code'),
  client_id: z.string(),
  redirect_uri: z.string().describe("One of the client's redirect_uris, exactly"),
  scope: z.string().describe("Space-separated subset of the client's scopes"),
  state: z.string().max(AUTHORIZE_PARAMETER_MAX_LENGTH).optional().describe('Returned to the client as it came; longer is invalid_request'),
  code_challenge: z.string().describe('BASE64URL(SHA-256(code_verifier))'),
  code_challenge_method: z.literal('S256'),
  response_mode: z
    .enum(['query', 'fragment', 'form_post'])
    .optional()
    .describe('How the answer returns to the client: in the query (the default), the fragment, or a form the page posts'),
});

const TokenFormSchema = z.object({
  token: z.string(),
  token_type_hint: z.enum(['access_token', 'refresh_token']).optional(),
  client_id: z.string().optional(),
  client_secret: z.string().optional(),
});

export const IntrospectionSchema = z
  .object({
    active: z.boolean(),
    scope: z.string().optional(),
    client_id: z.string().optional(),
    sub: z
      .string()
      .optional()
      .describe("agent:<id> for an agent's client, the signing-in key's id for an authorization-code token, else the client_id"),
    token_type: z.string().optional(),
    exp: z.number().int().optional(),
    iat: z.number().int().optional(),
    iss: z.string().optional(),
    aud: z
      .string()
      .optional()
      .describe('The resource (RFC 8707) the token was issued for: <issuer>, <issuer>/v1 or <issuer>/mcp; absent, the whole server'),
  })
  .describe('RFC 7662 answer; only {"active": false} for a token that is not active or not of the caller\'s tenant');

export const ConsentFormSchema = z.object({
  api_key: z.string().optional().describe("An API key of the client's tenant holding every requested scope; used once, never stored"),
  decision: z.enum(['approve', 'deny']),
  csrf: z.string(),
});

/** Hosts a registering client may redirect to over plain http: the loopback interface (RFC 8252 7.3), on any port. */
const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost']);

/** A self-registered client's redirect URI: https, or http to the loopback interface (RFC 8252); absolute, no fragment. */
const RegisteredRedirectUriSchema = RedirectUriSchema.refine((value) => {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || LOOPBACK_HOSTS.has(url.hostname);
  } catch {
    // No URL at all: refused above already (zod runs this refinement too).
    return true;
  }
}, 'must be https, or http to 127.0.0.1, [::1] or localhost');

/** Scopes a self-registered client gets when it names none: what MCP clients ask for, never admin. */
export const DEFAULT_REGISTERED_SCOPE = 'check:read grant:read grant:write';

const RegisteredScopeSchema = z
  .string()
  .max(256)
  .refine(
    (value) => {
      const scopes = value.split(' ');
      return scopes.length > 0 && scopes.every((scope) => KeyScopeSchema.safeParse(scope).success);
    },
    { message: 'must be space-separated scopes among check:read, grant:read, grant:write and admin' },
  );

/**
 * What a client sends to register itself (RFC 7591 2): grantd takes public clients of the
 * authorization code flow only. Other metadata is ignored (RFC 7591 2), and not stored.
 */
export const ClientRegistrationRequestSchema = z.object({
  redirect_uris: z.array(RegisteredRedirectUriSchema).min(1).max(32).describe('https, or http to 127.0.0.1, [::1] or localhost on any port'),
  token_endpoint_auth_method: z.literal('none').optional().describe('Public clients only: none, the default here'),
  grant_types: z
    .array(z.enum(['authorization_code', 'refresh_token']))
    .min(1)
    .refine((types) => types.includes('authorization_code'), 'must include authorization_code')
    .optional()
    .describe('Default ["authorization_code", "refresh_token"]'),
  response_types: z.array(z.literal('code')).min(1).optional().describe('Default ["code"]'),
  scope: RegisteredScopeSchema.optional().describe(`The most a token of this client may carry; default "${DEFAULT_REGISTERED_SCOPE}"`),
  client_name: TextSchema.min(1).max(256).optional().describe('Shown on the consent page; default the host of the first redirect URI'),
});

export const ClientRegistrationSchema = z
  .object({
    client_id: z.string().describe('oc_ followed by base62'),
    client_id_issued_at: z.number().int().describe('Seconds since the epoch'),
    client_name: z.string(),
    redirect_uris: z.array(z.string()),
    grant_types: z.array(z.enum(['authorization_code', 'refresh_token'])),
    response_types: z.array(z.literal('code')),
    token_endpoint_auth_method: z.literal('none'),
    scope: z.string(),
  })
  .describe('RFC 7591 3.2.1: the client as registered');

/** RFC 7591 3.2.2's error codes that grantd uses, and RFC 6749's temporarily_unavailable for its rate limit. */
export const REGISTRATION_ERRORS = ['invalid_redirect_uri', 'invalid_client_metadata', 'temporarily_unavailable'] as const;

export const RegistrationErrorSchema = z
  .object({ error: z.enum(REGISTRATION_ERRORS), error_description: z.string().optional() })
  .describe('RFC 7591 error');

const registrationError = c.otherResponse({ contentType: 'application/json', body: RegistrationErrorSchema });

/** Who serves an OAuth protocol route: the authorization server library, or grantd's own pages in front of it. */
export type OAuthServer = 'library' | 'consent-page' | 'introspection' | 'registration';
export const servedBy = (server: OAuthServer) => ({ oauth: server }) as const;
export type OAuthRouteMetadata = ReturnType<typeof servedBy>;

/** Who serves a route of the contract: an OAuth server for the protocol routes, ts-rest (undefined) for the rest. */
export const oauthServerOf = (route: { metadata?: unknown }): OAuthServer | undefined =>
  (route.metadata as Partial<OAuthRouteMetadata> | undefined)?.oauth;

const UidSchema = z.object({ uid: z.string().min(1).max(64) });

export const oauthClientsContract = c.router({
  create: {
    method: 'POST',
    path: '/oauth/clients',
    summary: 'Register an OAuth client',
    description: "A confidential client's secret is in this response only and cannot be retrieved again.",
    body: CreateOAuthClientSchema,
    responses: {
      201: CreatedOAuthClientSchema,
      ...badRequest(['invalid-request']),
      ...notFound(['agent-not-found']),
      ...bodyProblems,
      ...commonProblems,
    },
    metadata: writes('admin', { invalidates: [] }),
  },
  list: {
    method: 'GET',
    path: '/oauth/clients',
    summary: 'List OAuth clients',
    description: 'Clients of the tenant, oldest first; never a secret.',
    responses: { 200: z.object({ clients: z.array(OAuthClientSchema) }), ...badRequest(['invalid-request']), ...commonProblems },
    metadata: requires('admin'),
  },
  delete: {
    method: 'DELETE',
    path: '/oauth/clients/:client_id',
    summary: 'Delete an OAuth client',
    description: 'Every token of the client stops working: at once on this node, within one second on every node.',
    pathParams: z.object({ client_id: z.string().min(1).max(128) }),
    body: c.noBody(),
    responses: { 204: c.noBody(), ...badRequest(['invalid-request']), ...notFound(['client-not-found']), ...commonProblems },
    // keys: its tokens end with it.
    metadata: writes('admin', { invalidates: ['keys'] }),
  },
});

/**
 * The OAuth 2.0 protocol routes (docs/oauth.md), under /v1/oauth beside the clients: form-encoded,
 * answered with RFC 6749 errors, served by the authorization server library, the consent page and
 * introspection rather than by ts-rest, and needing no API key scope.
 */
export const oauthProtocolRoutes = c.router({
  token: {
    method: 'POST',
    path: '/oauth/token',
    summary: 'Issue a token',
    description:
      'RFC 6749 token endpoint: client_credentials (confidential clients), authorization_code with PKCE, refresh_token (single use). ' +
      'Client authentication: client_secret_basic, client_secret_post, or none for public clients.',
    contentType: FORM,
    body: TokenRequestSchema,
    responses: { 200: TokenResponseSchema, 400: oauthError, 401: oauthError, 429: oauthError, 500: oauthError },
    metadata: servedBy('library'),
  },
  authorize: {
    method: 'GET',
    path: '/oauth/authorize',
    summary: 'Start an authorization',
    description:
      'RFC 6749 4.1 with PKCE (S256 only). Redirects to the consent page; an invalid client_id or redirect_uri shows an error page and never redirects. ' +
      'Other errors redirect back to the client with error and iss (RFC 9207), or with response_mode=form_post are a page that posts them. ' +
      `Rate limited per client and per client address, and at most ${PENDING_CONSENTS_PER_CLIENT} consents pending per client: past either, a 429 page with Retry-After.`,
    query: AuthorizeQuerySchema,
    responses: { 303: c.noBody(), 302: c.noBody(), 400: html, 429: html },
    metadata: servedBy('library'),
  },
  resume: {
    method: 'GET',
    path: '/oauth/authorize/:uid',
    summary: 'Finish an authorization',
    description:
      'Where the consent page sends the browser: redirects to the client with code, state and iss, or error=access_denied; ' +
      'with response_mode=form_post, a page that posts them to the client.',
    pathParams: UidSchema,
    responses: { 200: html, 303: c.noBody(), 400: html },
    metadata: servedBy('library'),
  },
  consent: {
    method: 'GET',
    path: '/oauth/consent/:uid',
    summary: 'Consent page',
    description: "Names the client and each requested scope; the person signs in with an API key of the client's tenant and approves or denies.",
    pathParams: UidSchema,
    responses: { 200: html, 400: html },
    metadata: servedBy('consent-page'),
  },
  decide: {
    method: 'POST',
    path: '/oauth/consent/:uid',
    summary: 'Approve or deny',
    contentType: FORM,
    pathParams: UidSchema,
    body: ConsentFormSchema,
    responses: { 303: c.noBody(), 400: html, 403: html },
    metadata: servedBy('consent-page'),
  },
  revoke: {
    method: 'POST',
    path: '/oauth/revoke',
    summary: 'Revoke a token',
    description: 'RFC 7009: 200 for a token the client may revoke and for an unknown one. A refresh token ends its whole grant.',
    contentType: FORM,
    body: TokenFormSchema,
    responses: { 200: c.noBody(), 400: oauthError, 401: oauthError, 429: oauthError, 500: oauthError },
    metadata: servedBy('library'),
  },
  introspect: {
    method: 'POST',
    path: '/oauth/introspect',
    summary: 'Introspect a token',
    description:
      'RFC 7662. The caller authenticates as a confidential client (Basic), or with a Bearer API key or access token holding check:read; ' +
      'a token of another tenant is {"active": false}.',
    contentType: FORM,
    body: TokenFormSchema,
    responses: { 200: IntrospectionSchema, 400: oauthError, 401: oauthError, 403: oauthError, 429: oauthError, 500: oauthError },
    metadata: servedBy('introspection'),
  },
  register: {
    method: 'POST',
    path: '/oauth/register',
    summary: 'Register a client (RFC 7591)',
    description:
      'Open dynamic client registration, for MCP clients and other public clients of the authorization code flow. ' +
      "The client belongs to no tenant until its first consent, where the signing-in API key's tenant binds it for good; " +
      'one never bound is deleted after 24 hours. Rate limited per client address (GRANTD_REGISTER_LIMIT an hour): past it, a 429 with Retry-After.',
    body: ClientRegistrationRequestSchema,
    responses: { 201: ClientRegistrationSchema, 400: registrationError, 429: registrationError },
    metadata: servedBy('registration'),
  },
  introspectByQuery: {
    method: 'GET',
    path: '/oauth/introspect',
    summary: 'Introspect a token (query)',
    description: 'The same answer as the POST form, for callers that cannot POST. The query is never logged.',
    query: z.object({ token: z.string(), token_type_hint: z.enum(['access_token', 'refresh_token']).optional() }),
    responses: { 200: IntrospectionSchema, 400: oauthError, 401: oauthError, 403: oauthError, 429: oauthError, 500: oauthError },
    metadata: servedBy('introspection'),
  },
});
