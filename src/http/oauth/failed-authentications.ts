import type { RequestHandler } from 'express';
import { withoutCredentials } from '../../auth/oauth/answers.ts';
import { contract } from '../../../contract/index.ts';
import { clientAddress } from '../client-address.ts';
import type { AppDeps } from '../context.ts';
import { sendOAuthError } from './responses.ts';

/** The protocol routes where a client or caller authenticates: each 401 there is a failed attempt. */
export const CLIENT_AUTHENTICATING_ROUTES = [
  contract.oauth.token,
  contract.oauth.revoke,
  contract.oauth.introspect,
  contract.oauth.introspectByQuery,
];

/**
 * Failed authentications on the token, revocation and introspection endpoints count against the
 * caller's address, as they do on /v1 (docs/configuration.md, GRANTD_AUTH_FAILURE_LIMIT): an address
 * over its limit is answered 429 before any secret is compared, and every 401 these endpoints send,
 * whether the library's or grantd's own, is counted once the answer is sent, except one to a request
 * that sent no credentials at all (as a /v1 request with no key is not counted).
 */
export function failedAuthenticationLimit(deps: AppDeps): RequestHandler {
  const failures = deps.limits.authFailures;
  return (req, res, next) => {
    const address = clientAddress(req.ip);
    const wait = failures.waitFor(address);
    if (wait > 0) {
      res.setHeader('Retry-After', String(wait));
      return sendOAuthError(res, 429, {
        error: 'temporarily_unavailable',
        error_description: `this address is limited to ${failures.limit.describe('failed authentications')}; retry in ${wait} s`,
      });
    }
    res.on('finish', () => {
      if (res.statusCode !== 401 || withoutCredentials.has(res)) return;
      failures
        .record(address)
        .catch((error: unknown) => deps.logger.warn({ err: { message: (error as Error).message } }, 'a failed authentication was not counted'));
    });
    next();
  };
}
