import { exactRouter } from '../options.ts';
import type { Router } from 'express';
import { isAppRoute, type AppRoute, type AppRouter } from '@ts-rest/core';
import { contract, oauthServerOf, type OAuthServer } from '../../../contract/index.ts';
import type { AppDeps } from '../context.ts';
import { authorizationLimit } from './authorization-limits.ts';
import { consentRoutes } from './consent.ts';
import { CLIENT_AUTHENTICATING_ROUTES, failedAuthenticationLimit } from './failed-authentications.ts';
import { introspectionRoutes } from './introspection.ts';
import { libraryRoute, providerSource, type OAuthOptions } from './library.ts';
import { protectedResourceRoutes } from './protected-resource.ts';
import { registrationRoutes } from './registration.ts';

export const AUTHORIZATION_SERVER_METADATA = '/.well-known/oauth-authorization-server';

/** The contract's OAuth protocol routes that a given server answers. */
export const oauthRoutesServedBy = (server: OAuthServer): AppRoute[] =>
  Object.values(contract.oauth as AppRouter).filter((route): route is AppRoute => isAppRoute(route) && oauthServerOf(route) === server);

/**
 * The OAuth 2.0 authorization server's routes: exactly the contract's protocol routes, its metadata
 * document and the protected resources' three. The library answers the protocol itself (RFC 6749
 * errors, no-store); grantd's consent page and introspection for Bearer callers sit beside it.
 */
export function oauthRouter(deps: AppDeps, options: OAuthOptions): Router {
  const router = exactRouter();
  const provider = providerSource(deps, options);
  const library = libraryRoute(provider, options.publicUrl);

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
  router.use(registrationRoutes(deps));
  for (const route of oauthRoutesServedBy('library')) {
    router[route.method === 'GET' ? 'get' : 'post'](route.path, library);
  }
  router.get(AUTHORIZATION_SERVER_METADATA, library);
  router.use(protectedResourceRoutes(options.publicUrl));
  return router;
}
