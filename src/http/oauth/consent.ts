import { randomBytes } from 'node:crypto';
import { exactRouter } from '../options.ts';
import express, { type Request, type Response, type Router } from 'express';
import type Provider from 'oidc-provider';
import { contract, KEY_SCOPES, type KeyScope } from '../../../contract/index.ts';
import { boundTenantOfClient, registeredItself } from '../../auth/oauth/clients.ts';
import { consentPage, errorPage } from '../../auth/oauth/pages.ts';
import { hasScope } from '../../auth/scopes.ts';
import { digestsEqual, hashSecret } from '../../auth/secrets.ts';
import { bindOAuthClient } from '../../store/oauth-clients.ts';
import { tenantNameOf } from '../../store/tenants.ts';
import { clientAddress } from '../client-address.ts';
import type { AppDeps } from '../context.ts';
import type { ProviderSource } from './library.ts';
import { resourceIdentifiers } from './protected-resource.ts';
import { sendPage } from './responses.ts';

/** Double-submit CSRF token: a cookie only this site's pages send, echoed in the form. */
export const CSRF_COOKIE = 'grantd_consent';
const parseForm = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 10 });

type Interaction = Awaited<ReturnType<Provider['interactionDetails']>>;

const csrfCookieOf = (req: Request): string | undefined =>
  new RegExp(`(?:^|;\\s*)${CSRF_COOKIE}=([A-Za-z0-9_-]{43})(?:;|$)`).exec(req.headers.cookie ?? '')?.[1];

/**
 * The resources (RFC 8707) an authorization request is for: those it named, or every one of
 * grantd's when it named none or the whole server (`<issuer>`).
 */
function grantedResources(issuer: string, resource: unknown): string[] {
  const named = (Array.isArray(resource) ? resource : [resource]).filter((value): value is string => typeof value === 'string');
  return named.length === 0 || named.includes(issuer) ? resourceIdentifiers(issuer) : named;
}

/**
 * The library keeps one signed-in account per browser; when another key signs in, it would ask to sign
 * the first out on a page grantd does not serve, and the browser came back to the consent page. So
 * signing in with another key ends the browser's earlier sign-in first (the tokens it led to live on).
 */
async function endEarlierSignIn(oauth: Provider, details: Interaction, accountId: string): Promise<void> {
  const earlier = details.session;
  if (!earlier || earlier.accountId === accountId) return;
  if (earlier.uid) await (await oauth.Session.findByUid(earlier.uid))?.destroy();
  details.session = undefined;
  await details.persist();
}

/** The host the authorization request's redirect_uri names (the library checked it is one of the client's). */
const redirectHostOf = (details: Interaction): string => new URL(String(details.params.redirect_uri)).host;

/**
 * The consent page the library sends the browser to: it names the client and each requested scope;
 * the person signs in with an API key of the client's tenant that holds every one (the key is
 * checked once and kept nowhere) and approves, or denies. The library then redirects to the client.
 */
export function consentRoutes(deps: AppDeps, provider: ProviderSource): Router {
  const router = exactRouter();
  const { path } = contract.oauth.consent;

  /** The interaction of this browser and uid, with its client; null once an error page was sent. */
  async function interactionOf(req: Request, res: Response) {
    const oauth = await provider();
    let details: Interaction;
    try {
      details = await oauth.interactionDetails(req, res);
    } catch {
      sendPage(
        res,
        400,
        errorPage('invalid_request', 'This authorization request expired or was begun in another browser. Start again from the application.'),
      );
      return null;
    }
    const client = await oauth.Client.find(String(details.params.client_id));
    if (details.uid !== req.params.uid || !client) {
      sendPage(res, 400, errorPage('invalid_request', 'This authorization request is not the one this browser began.'));
      return null;
    }
    const requested = (typeof details.params.scope === 'string' ? details.params.scope : '')
      .split(' ')
      .filter((scope): scope is KeyScope => (KEY_SCOPES as readonly string[]).includes(scope));
    // Null for a client that registered itself and was never consented to: this consent binds it.
    const tenantId = boundTenantOfClient(client);
    const tenantName = tenantId === null ? null : await tenantNameOf(deps.db, tenantId);
    return { oauth, details, client, scopes: [...new Set(requested)], tenantId, tenantName };
  }

  function show(req: Request, res: Response, found: NonNullable<Awaited<ReturnType<typeof interactionOf>>>, status: number, error?: string): void {
    const csrf = randomBytes(32).toString('base64url');
    res.setHeader('Set-Cookie', `${CSRF_COOKIE}=${csrf}; Path=${req.baseUrl}${req.path}; HttpOnly; SameSite=Strict`);
    sendPage(
      res,
      status,
      consentPage({
        action: `${req.baseUrl}${req.path}`,
        clientName: found.client.clientName ?? found.client.clientId,
        clientId: found.client.clientId,
        tenantName: found.tenantName,
        scopes: found.scopes,
        csrf,
        ...(registeredItself(found.client)
          ? { selfRegistered: { redirectHost: redirectHostOf(found.details), unbound: found.tenantId === null } }
          : {}),
        ...(error ? { error } : {}),
      }),
    );
  }

  router.get(path, async (req, res, next) => {
    try {
      const found = await interactionOf(req, res);
      if (found) show(req, res, found, 200);
    } catch (error) {
      next(error);
    }
  });

  router.post(path, parseForm, async (req, res, next) => {
    try {
      const form = (req.body ?? {}) as Record<string, unknown>;
      const cookie = csrfCookieOf(req);
      if (!cookie || typeof form.csrf !== 'string' || !digestsEqual(hashSecret(cookie), hashSecret(form.csrf))) {
        return sendPage(
          res,
          403,
          errorPage('access_denied', 'This form did not come from the consent page this browser was shown. Start again from the application.'),
        );
      }
      const found = await interactionOf(req, res);
      if (!found) return;
      const { oauth, details, client, scopes, tenantId } = found;
      if (form.decision === 'deny') {
        return await oauth.interactionFinished(
          req,
          res,
          { error: 'access_denied', error_description: 'the request was denied on the consent page' },
          { mergeWithLastSubmission: false },
        );
      }
      if (form.decision !== 'approve') return show(req, res, found, 400, 'Choose Approve or Deny.');
      const address = clientAddress(req.ip);
      const wait = deps.limits.authFailures.waitFor(address);
      if (wait > 0) return show(req, res, found, 403, `Too many failed sign-ins from this address; try again in ${wait} s.`);
      const credential = typeof form.api_key === 'string' ? deps.keys.credentialOf(form.api_key.trim()) : null;
      const principal = credential ? await deps.keys.verify(credential) : null;
      // Only an API key signs in (not an access token): the grant's subject is the key.
      if (
        principal?.kind !== 'api_key' ||
        (tenantId !== null && principal.tenantId !== tenantId) ||
        !scopes.every((scope) => hasScope(principal.scopes, scope))
      ) {
        await deps.limits.authFailures.record(address);
        return show(req, res, found, 403, 'That API key is unknown, revoked, of another tenant, or lacks one of these scopes.');
      }
      // The first consent binds a client that registered itself to the key's tenant, for good; one
      // bound meanwhile to another tenant (or swept) is refused as a key of another tenant would be.
      if (tenantId === null && !(await bindOAuthClient(deps.db, principal.tenantId, client.clientId))) {
        return show(req, res, found, 403, 'This application is bound to another tenant: sign in with an API key of that tenant.');
      }
      await endEarlierSignIn(oauth, details, principal.keyId);
      const grant = new oauth.Grant({ accountId: principal.keyId, clientId: client.clientId });
      grant.addOIDCScope(scopes.join(' '));
      // RFC 8707: the same scopes for each resource its tokens may be issued for (library-seams.ts, wholeServerNarrows).
      for (const resource of grantedResources(oauth.issuer, details.params.resource)) grant.addResourceScope(resource, scopes.join(' '));
      const grantId = await grant.save();
      await oauth.interactionFinished(req, res, { login: { accountId: principal.keyId }, consent: { grantId } }, { mergeWithLastSubmission: false });
    } catch (error) {
      next(error);
    }
  });
  return router;
}
