import type { RequestHandler } from 'express';
import { errorPage } from '../../auth/oauth/pages.ts';
import { clientAddress } from '../client-address.ts';
import type { AppDeps } from '../context.ts';
import { sendPage } from './responses.ts';

/**
 * An authorization request is stored until the person decides (docs/oauth.md#limits-of-authorization-requests):
 * each takes a point of its client address and then one of its client_id (GRANTD_AUTHORIZE_LIMIT a
 * window each) before the library reads it. Past either limit the answer is a 429 page with
 * Retry-After, never a redirect: the redirect_uri is not checked yet at this point.
 */
export function authorizationLimit(deps: AppDeps): RequestHandler {
  const { authorizations } = deps.limits;
  return async (req, res, next) => {
    const clientId = typeof req.query.client_id === 'string' ? req.query.client_id : '';
    const wait = (await authorizations.take(`address:${clientAddress(req.ip)}`)) || (await authorizations.take(`client:${clientId}`));
    if (wait === 0) return next();
    res.setHeader('Retry-After', String(wait));
    sendPage(
      res,
      429,
      errorPage(
        'temporarily_unavailable',
        `Too many authorization requests from this address or for this application (${authorizations.describe('requests')} each); try again in ${wait} s.`,
      ),
    );
  };
}
