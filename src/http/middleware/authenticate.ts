import type { NextFunction, Request, Response } from 'express';
import type { AppRoute } from '@ts-rest/core';
import type { RouteMetadata } from '../../../contract/index.ts';
import { hasScope } from '../../auth/scopes.ts';
import type { KeyVerifier } from '../../auth/verifier.ts';
import { sendProblem } from '../problem.ts';

export const BEARER = /^Bearer +([^\s]+) *$/i;

/** Resolves the bearer key, then enforces the scope the contract's route metadata names. */
export function authenticate(keys: KeyVerifier) {
  return async (req: Request & { tsRestRoute: AppRoute }, res: Response, next: NextFunction): Promise<void> => {
    const match = BEARER.exec(req.headers.authorization ?? '');
    const principal = match ? await keys.verify(match[1]!) : null;
    if (!principal) {
      res.setHeader('WWW-Authenticate', match ? 'Bearer realm="grantd", error="invalid_token"' : 'Bearer realm="grantd"');
      return sendProblem(res, 'unauthenticated', match ? 'the API key is unknown or revoked' : 'send an API key as Authorization: Bearer <secret>');
    }
    const { scope } = req.tsRestRoute.metadata as RouteMetadata;
    if (!hasScope(principal.scopes, scope)) {
      return sendProblem(res, 'insufficient-scope', `this operation needs a key with scope ${scope}`);
    }
    req.principal = principal;
    next();
  };
}
