import { createRequire } from 'node:module';
import Provider, { errors, type KoaContextWithOIDC } from 'oidc-provider';
import { PENDING_CONSENTS_PER_CLIENT } from '../../../contract/index.ts';
import { offWhenIdle } from '../../async-storage.ts';
import { ConfigError } from '../../config.ts';
import { retryAfterSeconds } from '../../rate-limits.ts';
import { AlreadyConsumed, TooManyPendingConsents } from '../../store/oauth-records.ts';
import { digestsEqual, hashSecret } from '../secrets.ts';
import { ownScopeOfClient } from './clients.ts';
import { FORM_POST_CSP, formPostPage } from './pages.ts';
import { RateLimited, unknownScopeError, unknownScopes } from './refusals.ts';
import { ACCESS_TOKEN_PREFIX, REFRESH_TOKEN_PREFIX } from './token-format.ts';

/*
 * Every place grantd reaches into oidc-provider past its public API: modules of its own it does not
 * export (its AsyncLocalStorage, its per-provider state, how it ends a grant) and methods of its
 * models replaced on their prototypes. Each is written against one version of the library, which is
 * checked as this module loads: a serving node loads it before it listens (src/cli/serve.ts).
 */

/** The version of oidc-provider these seams were written against and checked with. */
export const LIBRARY_VERSION = '9.13.3';

/** Refuses any other version of the library than LIBRARY_VERSION: its internals may have moved. A ConfigError: grantd's command line tells it in one line. */
export function assertLibraryVersion(installed: string): void {
  if (installed === LIBRARY_VERSION) return;
  throw new ConfigError(
    `oidc-provider ${installed} is installed, but grantd's OAuth server reaches into oidc-provider ${LIBRARY_VERSION}'s internals ` +
      `(src/auth/oauth/library-seams.ts): install ${LIBRARY_VERSION} (npm ci), or check each seam against ${installed} and set LIBRARY_VERSION there`,
  );
}

assertLibraryVersion((createRequire(import.meta.url)('oidc-provider/package.json') as { version: string }).version);

// Its modules that it does not export, imported once the version is checked: another version may not have them.
const [{ default: libraryStorage }, { default: revokeGrant }, { default: libraryState }] = await Promise.all([
  import('oidc-provider/lib/helpers/als.js'),
  import('oidc-provider/lib/helpers/revoke.js'),
  import('oidc-provider/lib/helpers/weak_cache.js'),
]);

/** The library's one AsyncLocalStorage, in which it runs each of its requests (`Provider.ctx`). */
export { libraryStorage };

/**
 * Runs one request through the library, which runs each of its requests in its AsyncLocalStorage
 * and never switches it off: grantd does, once the library's last request under way has settled
 * (docs/decisions.md#the-oauth-librarys-request-context-is-on-only-while-it-answers).
 */
export const throughLibrary = offWhenIdle(libraryStorage);

/** What grantd changes in the library once a provider is made: its models, and two of its tables. */
export function adaptLibrary(provider: Provider, resources: string[], perClientLimit?: (clientId: string) => Promise<number>): void {
  prefixTokens(provider);
  usedOnce(provider.AuthorizationCode, 'authorization code');
  usedOnce(provider.RefreshToken, 'refresh token');
  capPendingConsents(provider);
  compareSecretDigests(provider);
  clientCredentialsScope(provider);
  libraryState(provider).responseModes.set('form_post', formPost);
  redirectUriRepeated(provider);
  wholeServerNarrows(provider, resources);
  if (perClientLimit) limitPerClient(provider, perClientLimit);
}

/** Token values carry a recognisable prefix (token-format.ts). */
function prefixTokens(provider: Provider): void {
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
}

/** Client secrets are compared by digest: only digests are stored, and the client's metadata holds one in place of its secret (clients.ts). */
function compareSecretDigests(provider: Provider): void {
  (provider.Client.prototype as unknown as { compareClientSecret: (actual: string) => boolean }).compareClientSecret = function (
    this: { clientSecret?: string },
    actual: string,
  ) {
    if (typeof actual !== 'string' || !this.clientSecret) return false;
    return digestsEqual(hashSecret(actual), Buffer.from(this.clientSecret, 'base64url'));
  };
}

/**
 * A client_credentials request naming a scope that is no scope of grantd is invalid_scope; one
 * without `scope` gets the client's own scopes (the library would issue none).
 */
function clientCredentialsScope(provider: Provider): void {
  const credentials = provider.ClientCredentials.prototype as unknown as { save: () => Promise<string>; scope?: string; client?: object };
  const save = credentials.save;
  credentials.save = function (this: typeof credentials) {
    // The library has dropped the names that are no scope before this point: the request's own
    // parameter tells whether it named one.
    const unknown = unknownScopes(Provider.ctx?.oidc.body?.scope);
    if (unknown.length > 0) throw unknownScopeError(unknown);
    this.scope ||= (this.client && ownScopeOfClient(this.client)) || undefined;
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
 * RFC 8707: an authorization for the whole server (`<issuer>`, the first of `resources`, or no
 * resource at all) may be redeemed or refreshed for any one of grantd's resources, a narrower
 * audience; one for a named resource, for that one only. The library admits only the resources the
 * authorization named, as its codes' and refresh tokens' `resourceIndicators` list them.
 */
function wholeServerNarrows(provider: Provider, resources: string[]): void {
  const [wholeServer] = resources;
  for (const model of [provider.AuthorizationCode, provider.RefreshToken]) {
    Object.defineProperty(model.prototype, 'resourceIndicators', {
      get(this: { resource?: string | string[] }) {
        const named = this.resource === undefined ? [] : [this.resource].flat();
        return new Set(named.length === 0 || named.includes(wholeServer!) ? resources : named);
      },
    });
  }
}

/** What an authorization request without `redirect_uri` leaves on its stored parameters, and its code as `redirectUriOmitted`. */
const REDIRECT_URI_OMITTED = 'grantd_redirect_uri_omitted';

/**
 * RFC 6749 4.1.3: `redirect_uri` is required at the token endpoint when the authorization request
 * carried it. The library fills in a client's only redirect URI where it is missing, at both
 * endpoints, and then cannot tell. So the authorization request's stored parameters (its
 * interaction) note that it had none, its code keeps that note, and a code redeemed without
 * `redirect_uri` is refused unless its request had none either.
 */
function redirectUriRepeated(provider: Provider): void {
  const Code = provider.AuthorizationCode as unknown as { IN_PAYLOAD: string[]; prototype: { save: () => Promise<string> } };
  Object.defineProperty(Code, 'IN_PAYLOAD', { value: [...Code.IN_PAYLOAD, 'redirectUriOmitted'] });
  const saveCode = Code.prototype.save;
  Code.prototype.save = function (this: { redirectUriOmitted?: boolean }) {
    const params = Provider.ctx?.oidc.entities.Interaction?.params;
    if (params?.[REDIRECT_URI_OMITTED] === true) this.redirectUriOmitted = true;
    return saveCode.call(this);
  };

  const interaction = provider.Interaction.prototype as unknown as { save: (ttl: number) => Promise<string>; params?: Record<string, unknown> };
  const saveInteraction = interaction.save;
  interaction.save = function (this: typeof interaction, ttl: number) {
    const ctx = Provider.ctx;
    // The authorization request as it came (grantd serves its GET form only), before the library filled anything in.
    if (ctx?.oidc.route === 'authorization' && ctx.query.redirect_uri === undefined && this.params) this.params[REDIRECT_URI_OMITTED] = true;
    return saveInteraction.call(this, ttl);
  };

  const { grantTypeHandlers } = libraryState(provider);
  const redeem = grantTypeHandlers.get('authorization_code')!;
  grantTypeHandlers.set('authorization_code', async (ctx) => {
    const { code, redirect_uri: redirectUri } = ctx.oidc.params as { code?: unknown; redirect_uri?: unknown };
    if (redirectUri === undefined && typeof code === 'string') {
      const found = (await provider.AuthorizationCode.find(code)) as { redirectUriOmitted?: boolean } | undefined;
      if (found && !found.redirectUriOmitted) {
        const refused = new errors.InvalidGrant();
        refused.error_description = 'redirect_uri is missing: the authorization request named one, and it must be repeated here';
        throw refused;
      }
    }
    return redeem(ctx);
  });
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
