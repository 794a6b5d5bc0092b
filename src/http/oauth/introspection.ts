import { exactRouter } from '../options.ts';
import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import { contract } from '../../../contract/index.ts';
import type { z } from 'zod';
import { tenantOfClient } from '../../auth/oauth/clients.ts';
import { hasScope } from '../../auth/scopes.ts';
import { findOAuthClient } from '../../store/oauth-clients.ts';
import { BEARER } from '../middleware/authenticate.ts';
import type { AppDeps } from '../context.ts';
import type { ProviderSource } from './library.ts';
import { sendOAuthError } from './responses.ts';

type Introspection = z.infer<(typeof contract.oauth.introspect.responses)[200]>;

const INACTIVE: Introspection = { active: false };
/** RFC 6749's form bodies are small; the library reads at most 56 KiB of one. */
const parseForm = express.urlencoded({ extended: false, limit: '56kb', parameterLimit: 20 });

/**
 * Introspection (RFC 7662) for callers the library does not authenticate: a Bearer API key or
 * access token holding check:read (POST or GET), and a confidential client's Basic credentials on
 * the GET form. A POST authenticated as a client goes to the library. Both answer the same fields
 * and only for tokens of the caller's own tenant.
 */
export function introspectionRoutes(deps: AppDeps, provider: ProviderSource, library: RequestHandler): Router {
  const router = exactRouter();
  const { path } = contract.oauth.introspect;

  const answer = async (req: Request, res: Response, token: unknown) => {
    const tenantId = await callerTenant(deps, await provider(), req, res);
    if (tenantId === null) return;
    if (typeof token !== 'string' || token === '') {
      return sendOAuthError(res, 400, { error: 'invalid_request', error_description: 'missing required parameter: token' });
    }
    res.json(await introspect(deps, await provider(), token, tenantId));
  };

  router.post(path, (req, res, next) => {
    if (!BEARER.test(req.headers.authorization ?? '')) return library(req, res, next);
    parseForm(req, res, (error?: unknown) => {
      if (error || !req.is('application/x-www-form-urlencoded')) {
        return sendOAuthError(res, 400, {
          error: 'invalid_request',
          error_description: 'send the token as an application/x-www-form-urlencoded body',
        });
      }
      answer(req, res, (req.body as Record<string, unknown>).token).catch(next);
    });
  });
  router.get(path, (req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    answer(req, res, req.query.token).catch(next);
  });
  return router;
}

/**
 * The tenant of the caller: a Bearer key or token holding check:read, or a confidential client
 * by Basic credentials. Null once refused (the answer is sent).
 */
async function callerTenant(deps: AppDeps, provider: Provider, req: Request, res: Response): Promise<string | null> {
  const authorization = req.headers.authorization ?? '';
  const bearer = BEARER.exec(authorization);
  if (bearer) {
    const credential = deps.keys.credentialOf(bearer[1]!);
    const principal = credential ? await deps.keys.verify(credential) : null;
    if (!principal) {
      sendOAuthError(
        res,
        401,
        { error: 'invalid_token', error_description: 'the API key or access token is unknown, expired or revoked' },
        'Bearer error="invalid_token"',
      );
      return null;
    }
    if (!hasScope(principal.scopes, 'check:read')) {
      sendOAuthError(
        res,
        403,
        { error: 'insufficient_scope', error_description: 'introspection needs check:read' },
        'Bearer error="insufficient_scope", scope="check:read"',
      );
      return null;
    }
    return principal.tenantId;
  }
  const basic = /^Basic +([A-Za-z0-9+/=]+) *$/i.exec(authorization);
  const [id, secret] = basic ? basicCredentials(basic[1]!) : [];
  const client = id !== undefined ? await provider.Client.find(id) : undefined;
  const known = client && client.clientAuthMethod !== 'none' && secret !== undefined && (await client.compareClientSecret(secret));
  if (!known) {
    sendOAuthError(
      res,
      401,
      { error: 'invalid_client', error_description: 'authenticate as a confidential client (Basic) or with a Bearer key or token' },
      'Basic realm="grantd"',
    );
    return null;
  }
  return tenantOfClient(client);
}

/** RFC 6749 2.3.1: client id and secret, each form-urlencoded, joined by a colon, in base64. */
function basicCredentials(encoded: string): [string, string] | [] {
  const decoded = Buffer.from(encoded, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return [];
  try {
    const unescape = (text: string) => decodeURIComponent(text.replace(/\+/g, ' '));
    return [unescape(decoded.slice(0, colon)), unescape(decoded.slice(colon + 1))];
  } catch {
    return [];
  }
}

/** The library's answer for a token, found through its models, for callers of `tenantId` only. */
async function introspect(deps: AppDeps, provider: Provider, value: string, tenantId: string): Promise<Introspection> {
  const token =
    (await provider.AccessToken.find(value)) ?? (await provider.ClientCredentials.find(value)) ?? (await provider.RefreshToken.find(value));
  if (!token?.isValid || !token.clientId) return INACTIVE;
  const owner = await findOAuthClient(deps.db, token.clientId);
  if (owner?.tenantId !== tenantId) return INACTIVE;
  const { grantId, accountId } = token as { grantId?: string; accountId?: string };
  if (grantId) {
    const grant = await provider.Grant.find(grantId, { ignoreExpiration: true });
    if (!grant || grant.isExpired || grant.clientId !== token.clientId || grant.accountId !== accountId) return INACTIVE;
  }
  const { extra, aud } = token as { extra?: { sub?: string }; aud?: string };
  return {
    active: true,
    scope: token.scope,
    client_id: token.clientId,
    sub: accountId ?? extra?.sub,
    token_type: token.kind === 'RefreshToken' ? undefined : 'Bearer',
    exp: token.exp,
    iat: token.iat,
    iss: provider.issuer,
    aud,
  };
}
