import { exactRouter } from '../options.ts';
import { type NextFunction, type Request, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import { isAppRoute, type AppRoute, type AppRouter } from '@ts-rest/core';
import { contract, KEY_SCOPES, oauthServerOf, type OAuthServer } from '../../../contract/index.ts';
import { cookieKeys } from '../../store/oauth-records.ts';
import type { AppDeps } from '../context.ts';
import { errorPage } from '../../auth/oauth/pages.ts';
import { authorizationLimit } from './authorization-limits.ts';
import { consentRoutes, sendPage } from './consent.ts';
import { CLIENT_AUTHENTICATING_ROUTES, failedAuthenticationLimit } from './failed-authentications.ts';
import { introspectionRoutes } from './introspection.ts';
import { throughLibrary } from './library-requests.ts';

export const AUTHORIZATION_SERVER_METADATA = '/.well-known/oauth-authorization-server';
export const PROTECTED_RESOURCE_METADATA = '/.well-known/oauth-protected-resource';

export interface OAuthOptions {
  /** The issuer (GRANTD_PUBLIC_URL), without a trailing slash. */
  publicUrl: string;
  /** Access token lifetime in seconds (GRANTD_OAUTH_ACCESS_TTL). */
  accessTtlSeconds: number;
}

/** The contract's OAuth protocol routes that a given server answers. */
export const oauthRoutesServedBy = (server: OAuthServer): AppRoute[] =>
  Object.values(contract.oauth as AppRouter).filter((route): route is AppRoute => isAppRoute(route) && oauthServerOf(route) === server);

/** The library, made when the first OAuth request arrives (its cookie keys come from the database). */
export type ProviderSource = () => Promise<Provider>;

function providerSource(deps: AppDeps, options: OAuthOptions): ProviderSource {
  let made: Promise<Provider> | null = null;
  return () => {
    // Imported here, not by the modules every CLI command loads: the library warns on Node.js 20 as
    // it loads, which grantd import or tenant create would print though neither serves OAuth. A
    // serving node has loaded it before it listens (src/cli/serve.ts).
    made ??= Promise.all([cookieKeys(deps.db), import('../../auth/oauth/provider.ts')]).then(([keys, { createOAuthProvider }]) =>
      createOAuthProvider({
        db: deps.db,
        issuer: options.publicUrl,
        accessTtl: options.accessTtlSeconds,
        cookieKeys: keys,
        perClientLimit: deps.limits.perKey ? (clientId) => deps.limits.perKey!.take(clientId) : undefined,
        hooks: {
          bearerEnded: () => deps.announce({ kind: 'keys' }),
          sweepFailed: (error) => deps.logger.warn({ err: { message: (error as Error)?.message } }, 'expired OAuth records could not be deleted'),
        },
      }),
    );
    made.catch(() => (made = null));
    return made;
  };
}

/**
 * The OAuth 2.0 authorization server's routes: exactly the contract's protocol routes and the two
 * metadata documents. The library answers the protocol itself (RFC 6749 errors, no-store); grantd's
 * consent page and introspection for Bearer callers sit beside it.
 */
export function oauthRouter(deps: AppDeps, options: OAuthOptions): Router {
  const router = exactRouter();
  const provider = providerSource(deps, options);
  let callback: ReturnType<Provider['callback']> | null = null;
  const issuer = new URL(options.publicUrl);
  const library = (req: Request, res: Response, next: NextFunction) => {
    // The library stores an authorization request's parameters as they came, and PostgreSQL's text
    // cannot hold U+0000: such a request is refused here, as the library refuses other bad ones.
    if (req.method === 'GET' && /%00/i.test(req.originalUrl)) {
      return sendPage(res, 400, errorPage('invalid_request', 'A parameter of this request holds a character that is not allowed (NUL).'));
    }
    // grantd is reached at its public URL: the library advertises and redirects to that origin.
    req.headers['x-forwarded-host'] = issuer.host;
    req.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
    throughLibrary(() => provider().then((p) => (callback ??= p.callback())(req, res))).catch(next);
  };

  // RFC 6749 5.1: every answer of the token endpoint is not to be cached, errors and grantd's own
  // 429s included; the library sets only Cache-Control, and HTTP/1.0 caches read Pragma.
  router.post(contract.oauth.token.path, (_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    next();
  });
  const limit = failedAuthenticationLimit(deps);
  for (const route of CLIENT_AUTHENTICATING_ROUTES) router[route.method === 'GET' ? 'get' : 'post'](route.path, limit);
  router.get(contract.oauth.authorize.path, authorizationLimit(deps));
  router.use(introspectionRoutes(deps, provider, library));
  router.use(consentRoutes(deps, provider));
  for (const route of oauthRoutesServedBy('library')) {
    router[route.method === 'GET' ? 'get' : 'post'](route.path, library);
  }
  router.get(AUTHORIZATION_SERVER_METADATA, library);
  router.get(PROTECTED_RESOURCE_METADATA, (_req, res) => {
    res.json({
      resource: `${options.publicUrl}/v1`,
      authorization_servers: [options.publicUrl],
      scopes_supported: KEY_SCOPES,
      bearer_methods_supported: ['header'],
      resource_documentation: `${options.publicUrl}/docs`,
    });
  });
  return router;
}
