import type { NextFunction, Request, Response } from 'express';
import type { AppRoute } from '@ts-rest/core';
import { CONSISTENCY_HEADER, type KeyScope, type RouteMetadata } from '../../../contract/index.ts';
import { hasScope, missingScopeDetail } from '../../auth/scopes.ts';
import type { Credential, KeyVerifier } from '../../auth/verifier.ts';
import type { FailedAuthentications } from '../../rate-limits.ts';
import type { Freshness } from '../../store/freshness.ts';
import type { Principal } from '../../auth/principal.ts';
import { readConsistency } from '../revisions.ts';
import { clientAddress } from '../client-address.ts';
import { sendProblem } from '../problem.ts';
import { sendRateLimited } from './rate-limit.ts';
import { protectedResourceOf } from '../oauth/protected-resource.ts';

/**
 * The metadata of a path that is no contract route and whose handler enforces the scope of each
 * operation it carries once the body is read (POST /mcp: each tool's); any valid key is admitted to it.
 */
export interface ScopedByHandler {
  scope: null;
  revisions?: undefined;
}

export const BEARER = /^Bearer +([^\s]+) *$/i;

/**
 * The credential a request was admitted with, which `reauthenticate` asks about again: on the request
 * under a key of this module's own, rather than in a WeakMap (an entry a request, which the collector
 * then clears: docs/decisions.md#a-request-pays-for-what-it-needs-and-no-more).
 */
const CREDENTIAL = Symbol('credential');
type Admitted = Request & { [CREDENTIAL]?: Credential };

/** The RFC 9728 parameter naming the metadata of the resource a request is for. */
const resourceMetadataParam = (issuer: string, req: Request): string =>
  `resource_metadata="${protectedResourceOf(issuer, req.baseUrl + req.path).metadata}"`;

/**
 * RFC 9728 5.1: a 401 tells OAuth clients where the metadata of the resource they called is (the
 * API's, or the MCP endpoint's for a request under /mcp, which mounts this same authentication).
 */
export const bearerChallenge = (issuer: string, req: Request): string => `Bearer realm="grantd", ${resourceMetadataParam(issuer, req)}`;

/**
 * RFC 8707: an access token issued for a resource is good there only, one for the whole server
 * (`<issuer>`, or no resource) on /v1 and /mcp alike. An API key names no resource.
 */
function admitsAudience(issuer: string, req: Request, principal: Principal): boolean {
  if (principal.kind === 'api_key' || principal.audience === undefined || principal.audience === issuer) return true;
  return principal.audience === protectedResourceOf(issuer, req.baseUrl + req.path).resource;
}

/**
 * Authentication in two steps around the reading of the body. `authenticate` resolves the bearer
 * key before the body is read (an unknown caller never gets to send one) and enforces the scope the
 * contract's route metadata names. `reauthenticate` runs once the body has arrived, right before
 * the handler: a key revoked while a slow client was still sending is refused there. It asks the
 * verifier again with the digest computed the first time, so on the hot path it is a lookup in
 * this node's memory; a revocation here (which empties that memory) or on another node (once the
 * remembered answer is too old) makes it a query, and the request a 401.
 *
 * A client address past its limit of failed authentications is answered 429 before any lookup,
 * unless its key is one this node holds as verified or found live lately (KeyVerifier.isKnown): a
 * neighbour behind the same address that keeps sending a bad key does not lock out the keys in use
 * there. Every other attempt is counted before its lookup, and given back once the key is found:
 * concurrent bad keys are counted as they arrive, so no more of them are looked up than the limit
 * allows. A key found live lately is counted only if its lookup fails: a backend checking for many
 * tenants, each with its key, looks many of them up at once from one address.
 *
 * A read's Grantd-Consistency (docs/consistency.md#revisions) is handled here too, as the route's
 * metadata says: it brings this process's caches to the state it names before anything is answered,
 * the key's verification included (a key revoked in that state is refused). What a write owes is
 * applied around its handler (write-obligations.ts).
 */
export function authentication(keys: KeyVerifier, freshness: Freshness, failures: FailedAuthentications, issuer: string) {
  const refuse = (req: Request, res: Response, detail: string, error = true): void => {
    const challenge = bearerChallenge(issuer, req);
    res.setHeader('WWW-Authenticate', error ? `${challenge}, error="invalid_token"` : challenge);
    sendProblem(res, 'unauthenticated', detail);
  };
  /** The 403 of a request whose key or token lacks `scope`: a route's, or a tool's on POST /mcp (src/http/mcp/endpoint.ts). */
  const refuseScope = (req: Request, res: Response, scope: KeyScope): void => {
    // RFC 6750 3.1: the client learns which scope to ask for, and where the resource's metadata is.
    res.setHeader('WWW-Authenticate', `Bearer error="insufficient_scope", scope="${scope}", ${resourceMetadataParam(issuer, req)}`);
    sendProblem(res, 'insufficient-scope', missingScopeDetail(scope));
  };

  /** Lets the request on as `principal`, when its key may do what the route needs (and, reading at a revision, once there). */
  const admit = (
    req: Request & { tsRestRoute: AppRoute },
    res: Response,
    next: NextFunction,
    credential: Credential,
    principal: Principal,
  ): void | Promise<void> => {
    if (!admitsAudience(issuer, req, principal)) return refuse(req, res, 'this access token was issued for another resource (its audience)');
    const { scope, revisions } = req.tsRestRoute.metadata as RouteMetadata | ScopedByHandler;
    if (scope !== null && !hasScope(principal.scopes, scope)) return refuseScope(req, res, scope);
    const consistency = revisions === 'reads' ? req.get(CONSISTENCY_HEADER) : undefined;
    if (consistency !== undefined) return admitAt(consistency, req, res, next, credential, principal);
    (req as Admitted)[CREDENTIAL] = credential;
    req.principal = principal;
    next();
  };

  /** A read's Grantd-Consistency: this process's caches are brought to its state first, the key's verification included. */
  const admitAt = async (
    consistency: string,
    req: Request,
    res: Response,
    next: NextFunction,
    credential: Credential,
    principal: Principal,
  ): Promise<void> => {
    const wanted = readConsistency(principal.cursorSecret, consistency);
    if (await freshness.reach(principal.tenantId, wanted)) {
      const current = await keys.verify(credential);
      if (current?.keyId !== principal.keyId) return refuse(req, res, 'the API key or access token is unknown, expired or revoked');
    }
    (req as Admitted)[CREDENTIAL] = credential;
    req.principal = principal;
    next();
  };

  const lookUp = async (
    req: Request & { tsRestRoute: AppRoute },
    res: Response,
    next: NextFunction,
    credential: Credential | null,
  ): Promise<void> => {
    const address = clientAddress(req.ip);
    const counted = !credential || !keys.isKnown(credential);
    if (counted) {
      const wait = failures.waitFor(address) || (await failures.record(address));
      if (wait > 0) return tooManyFailures(res, wait, failures);
    }
    // A lookup that fails (the database unreachable) is no failed authentication: its point is given back.
    const principal = credential
      ? await keys.verify(credential).catch((error: unknown) => {
          if (counted) failures.succeeded(address);
          throw error;
        })
      : null;
    if (!principal) {
      // A key held verified until now (revoked, expired) fails like any other.
      const wait = counted ? 0 : await failures.record(address);
      return wait > 0 ? tooManyFailures(res, wait, failures) : refuse(req, res, 'the API key or access token is unknown, expired or revoked');
    }
    if (counted) failures.succeeded(address);
    return admit(req, res, next, credential!, principal);
  };

  // A key held verified and fresh is admitted at once, with no promise made or waited for; any other is looked up.
  const authenticate = (req: Request & { tsRestRoute: AppRoute }, res: Response, next: NextFunction): void | Promise<void> => {
    const match = BEARER.exec(req.headers.authorization ?? '');
    if (!match) return refuse(req, res, 'send an API key or access token as Authorization: Bearer <secret>', false);
    const credential = keys.credentialOf(match[1]!);
    const known = credential ? keys.verifiedNow(credential) : undefined;
    if (known) return admit(req, res, next, credential!, known);
    return lookUp(req, res, next, credential);
  };

  const reverify = (req: Request & { tsRestRoute: AppRoute }, res: Response, next: NextFunction, principal: Principal | null | undefined): void => {
    if (!principal || principal.keyId !== req.principal?.keyId) return refuse(req, res, 'the API key was revoked while the request was being sent');
    next();
  };
  const reauthenticate = (req: Request & { tsRestRoute: AppRoute }, res: Response, next: NextFunction): void | Promise<void> => {
    const credential = (req as Admitted)[CREDENTIAL];
    const known = credential ? keys.verifiedNow(credential) : undefined;
    if (known || !credential) return reverify(req, res, next, known);
    return keys.verify(credential).then((principal) => reverify(req, res, next, principal));
  };

  return { authenticate, reauthenticate, refuseScope };
}

function tooManyFailures(res: Response, seconds: number, failures: FailedAuthentications): void {
  sendRateLimited(res, seconds, `this address is limited to ${failures.limit.describe('failed authentications')}`);
}
